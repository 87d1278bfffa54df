#include "core/make_directories.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu {
namespace {

absl::Status IsDirectory(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::ErrnoToStatus(errno, StrCat("cannot inspect ", path));
  }
  return S_ISDIR(info.st_mode) ? absl::OkStatus()
                               : absl::FailedPreconditionError(StrCat(path, ": not a directory"));
}

// Sets the mode of the directory this process just made, through a
// descriptor: a symlink put in its place meanwhile is not followed.
absl::Status SetMode(const std::string& dir, mode_t mode) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || ::fchmod(fd, mode) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    return absl::ErrnoToStatus(error, StrCat("cannot set the mode of ", dir));
  }
  ::close(fd);
  return absl::OkStatus();
}

}  // namespace

absl::Status MakeDirectories(const std::string& path, mode_t mode) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir == "/" || dir == ".") return absl::OkStatus();
  struct stat info;
  if (::stat(dir.c_str(), &info) == 0) return IsDirectory(dir);
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos) {
    RETURN_IF_ERROR(MakeDirectories(slash == 0 ? "/" : dir.substr(0, slash), mode));
  }
  // The mode passed to mkdir is only ever narrowed by the umask, so the
  // directory is never more open than `mode`, even before SetMode.
  if (::mkdir(dir.c_str(), mode) != 0) {
    // EEXIST: another process made it meanwhile; its mode is its business.
    if (errno == EEXIST) return IsDirectory(dir);
    return absl::ErrnoToStatus(errno, StrCat("cannot create directory ", dir));
  }
  return SetMode(dir, mode);
}

}  // namespace canhazgpu
