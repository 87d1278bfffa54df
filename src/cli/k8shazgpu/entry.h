// main() of k8shazgpu.
#pragma once

namespace canhazgpu::cli::k8s {

int Main(int argc, char** argv);

}  // namespace canhazgpu::cli::k8s
