// Unix socket paths for the plugin's gRPC servers: the length limit of
// AF_UNIX, the directories the kubelet expects, and the stale files a
// crashed predecessor leaves behind. Stateless.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace canhazgpu::kubeletplugin {

// sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
inline constexpr std::size_t kMaxSocketPathLength = 107;

// InvalidArgument when `path` is empty or longer than kMaxSocketPathLength.
absl::Status CheckSocketPath(std::string_view path);

// The mode of the directories made for sockets: the kubelet runs as root,
// nobody else needs in.
inline constexpr mode_t kSocketDirMode = 0750;

// Makes `path` ready to listen on: checks its length, creates its missing
// parent directories (kSocketDirMode, whatever the umask) and removes a socket left there (a
// crashed run's, which would make bind fail). Anything else at `path` is FailedPrecondition: we do
// not delete a file we did not make.
absl::Status PrepareSocketPath(const std::string& path);

// Removes the socket at `path`, if any.
void RemoveSocket(const std::string& path);

}  // namespace canhazgpu::kubeletplugin
