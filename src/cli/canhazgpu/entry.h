// main() of the canhazgpu binaries.
#pragma once

namespace canhazgpu::cli {

int Main(int argc, char** argv);

}  // namespace canhazgpu::cli
