#include "changeset/disk_files.h"

#include <unistd.h>

#include <cerrno>

#include "core/atomic_file.h"
#include "core/file_read.h"
#include "core/strings.h"

namespace canhazgpu::changeset {

absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path, uint64_t size) {
  return ReadRegularFile(path.string(), static_cast<size_t>(size), "file");
}

absl::StatusOr<std::string> ReadSymlinkTarget(const std::filesystem::path& path) {
  std::string target(256, '\0');
  while (true) {
    ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return LocalFileError(errno, StrCat("reading the symlink ", path.string()));
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(static_cast<size_t>(n));
      return target;
    }
    target.resize(target.size() * 2);  // may have been cut short
  }
}

}  // namespace canhazgpu::changeset
