#include "git/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/strings.h"

namespace canhazgpu::git {

absl::StatusOr<FileLock> FileLock::Acquire(const std::filesystem::path& path) {
  int fd = canhazgpu::OpenFixedNameFile(path.string(), O_RDWR, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        StrCat("opening lock file ", path.string(), ": ", std::strerror(errno)));
  }
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int error = errno;
    close(fd);
    return absl::UnavailableError(StrCat("locking ", path.string(), ": ", std::strerror(error)));
  }
  return FileLock(fd);
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace canhazgpu::git
