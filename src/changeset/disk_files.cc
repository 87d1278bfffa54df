#include "changeset/disk_files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/file_read.h"
#include "core/strings.h"

namespace canhazgpu::changeset {
namespace {

absl::Status ErrnoError(int err, const std::string& what) {
  std::string message = StrCat(what, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// Beside the target, so that the rename stays in one file system.
std::filesystem::path TemporaryNameFor(const std::filesystem::path& path) {
  return StrCat(path.string(), ".tmp.", getpid());
}

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path, uint64_t size) {
  return ReadRegularFile(path.string(), static_cast<size_t>(size), "file");
}

absl::StatusOr<std::string> ReadSymlinkTarget(const std::filesystem::path& path) {
  std::string target(256, '\0');
  while (true) {
    ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return ErrnoError(errno, StrCat("reading the symlink ", path.string()));
    if (static_cast<size_t>(n) < target.size()) {
      target.resize(static_cast<size_t>(n));
      return target;
    }
    target.resize(target.size() * 2);  // may have been cut short
  }
}

absl::Status CreateSymlinkAtomically(const std::filesystem::path& path, const std::string& target) {
  const std::filesystem::path temporary = TemporaryNameFor(path);
  unlink(temporary.c_str());  // left by a crash
  if (symlink(target.c_str(), temporary.c_str()) != 0) {
    return ErrnoError(errno, StrCat("creating the symlink ", temporary.string()));
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(temporary.c_str());
    return ErrnoError(err, StrCat("renaming a new symlink onto ", path.string()));
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::changeset
