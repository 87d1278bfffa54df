#include "core/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu {

absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode,
                                 FileSync sync) {
  const bool durable = sync == FileSync::kDurable;
  const std::string tmp = StrCat(path, ".tmp.", getpid());
  auto failed = [&](const char* what) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return absl::UnavailableError(StrCat("cannot ", what, " ", path, ": ", why));
  };
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return failed("write");
  // open() applied the umask; the caller asked for exactly `mode`.
  if (fchmod(fd, mode) != 0) {
    close(fd);
    return failed("write");
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != text.size() || (durable && fsync(fd) != 0)) {
    if (done != text.size() && errno == 0) errno = EIO;
    close(fd);
    return failed("write");
  }
  if (close(fd) != 0) return failed("write");
  if (rename(tmp.c_str(), path.c_str()) != 0) return failed("replace");
  if (!durable) return absl::OkStatus();
  // The rename is durable once the directory is.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu
