#include "host/self_executable.h"

#include <unistd.h>

#include <filesystem>

namespace canhazgpu::host {

std::string SelfExecutableDir() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace canhazgpu::host
