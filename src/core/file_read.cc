#include "core/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu {

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                            const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    std::string message = StrCat("cannot read ", what, " ", path, ": ", strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  struct stat st;
  absl::Status status;
  std::string text;
  const std::string too_large = StrCat(what, " ", path, ": larger than ", max_bytes, " bytes");
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = absl::InvalidArgumentError(StrCat(what, " ", path, ": not a regular file"));
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    status = absl::InvalidArgumentError(too_large);
  } else {
    // Read at most one byte past the bound: the file may grow after fstat.
    // Start from the size fstat saw (files under /proc and /sys say 0) and
    // grow as needed: sizing the buffer to the bound would zero-fill
    // megabytes to read a few hundred bytes.
    const size_t limit = max_bytes + 1;
    text.resize(std::min(limit, st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 4096));
    size_t got = 0;
    while (true) {
      if (got == text.size()) {
        if (text.size() == limit) break;
        text.resize(std::min(limit, text.size() * 2));
      }
      const ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n < 0) {
          status =
              absl::InternalError(StrCat("cannot read ", what, " ", path, ": ", strerror(errno)));
        }
        break;
      }
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (status.ok() && got > max_bytes) status = absl::InvalidArgumentError(too_large);
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

}  // namespace canhazgpu
