#include "host/self_executable.h"

#include <filesystem>

namespace canhazgpu::host {

std::string SelfExecutableDir() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

}  // namespace canhazgpu::host
