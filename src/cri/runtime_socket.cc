#include "cri/runtime_socket.h"

#include <sys/stat.h>

#include <vector>

#include "core/strings.h"

namespace canhazgpu::cri {
namespace {

// stat, not lstat: /var/run/... is reached through a link on most hosts.
bool IsSocket(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

}  // namespace

absl::StatusOr<std::string> SocketPathOfEndpoint(std::string_view endpoint) {
  std::string_view path = Trim(endpoint);
  if (path.starts_with("unix://")) {
    path.remove_prefix(7);
  } else if (path.find("://") != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("container runtime endpoint ", endpoint,
               " is not a unix socket; use unix:///path/to/runtime.sock"));
  }
  if (!path.starts_with("/")) {
    return absl::InvalidArgumentError(
        StrCat("container runtime endpoint \"", endpoint, "\" is not an absolute socket path"));
  }
  return std::string(path);
}

absl::StatusOr<RuntimeSocket> FindRuntimeSocket(std::string_view flag, std::string_view root) {
  if (!Trim(flag).empty()) {
    auto path = SocketPathOfEndpoint(flag);
    if (!path.ok()) {
      return path.status();
    }
    return RuntimeSocket{.path = *path, .reason = StrCat("given with ", kRuntimeEndpointFlag)};
  }
  std::vector<std::string> tried;
  for (std::string_view known : kWellKnownRuntimeSockets) {
    std::string path = StrCat(root, known);
    if (IsSocket(path)) {
      return RuntimeSocket{
          .path = path,
          .reason = StrCat("found ", path, " (first existing of the usual CRI sockets)")};
    }
    tried.push_back(path);
  }
  return absl::NotFoundError(StrCat("no container runtime socket found (looked for ",
                                    Join(tried, ", "), "); pass ", kRuntimeEndpointFlag,
                                    "=unix:///path/to/runtime.sock"));
}

}  // namespace canhazgpu::cri
