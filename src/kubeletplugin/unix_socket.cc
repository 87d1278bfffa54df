#include "kubeletplugin/unix_socket.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/make_directories.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::kubeletplugin {
namespace {

absl::Status ErrnoError(std::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(errno, StrCat("cannot ", what, " ", path));
}

}  // namespace

absl::Status CheckSocketPath(std::string_view path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("socket path is empty");
  }
  if (path.size() > kMaxSocketPathLength) {
    return absl::InvalidArgumentError(StrCat("socket path ", path, " is ", path.size(),
                                             " bytes long; unix sockets allow ",
                                             kMaxSocketPathLength));
  }
  return absl::OkStatus();
}

absl::Status PrepareSocketPath(const std::string& path) {
  RETURN_IF_ERROR(CheckSocketPath(path));
  RETURN_IF_ERROR(MakeDirectories(std::filesystem::path(path).parent_path(), kSocketDirMode));
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    return errno == ENOENT ? absl::OkStatus() : ErrnoError("inspect", path);
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::FailedPreconditionError(StrCat(path, ": exists and is not a socket"));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove stale socket", path);
  }
  return absl::OkStatus();
}

void RemoveSocket(const std::string& path) {
  // Errors are ignored: at shutdown there is nobody left to tell, and a
  // socket already gone is what we want.
  ::unlink(path.c_str());
}

}  // namespace canhazgpu::kubeletplugin
