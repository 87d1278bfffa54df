// A fresh directory under /tmp for a test's unix sockets (whose paths are
// limited to 107 bytes, so not under the build tree), removed with all it
// holds at the end. Not thread-safe; one per test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace canhazgpu::cri::testing {

class ShortTempDir {
 public:
  ShortTempDir() {
    char name[] = "/tmp/cri-XXXXXX";
    path_ = ::mkdtemp(name) != nullptr ? name : "";
  }
  ~ShortTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ShortTempDir(const ShortTempDir&) = delete;
  ShortTempDir& operator=(const ShortTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace canhazgpu::cri::testing
