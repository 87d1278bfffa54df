// Where the running program's executable is, for finding programs installed
// next to it (canhazgpu-web beside canhazgpu).
#pragma once

#include <string>

namespace canhazgpu::host {

// The directory of /proc/self/exe, or "" when it cannot be read.
std::string SelfExecutableDir();

}  // namespace canhazgpu::host
