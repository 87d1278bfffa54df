// Where the running program is: its executable's directory (for finding
// programs installed next to it, canhazgpu-web beside canhazgpu) and the
// machine's name (the dashboard title, the DRA pool name).
#pragma once

#include <string>

namespace canhazgpu::host {

// The directory of /proc/self/exe, or "" when it cannot be read.
std::string SelfExecutableDir();

// gethostname(), or "localhost" when it fails.
std::string HostName();

}  // namespace canhazgpu::host
