// Creating the directories a daemon keeps its sockets and state in with the
// permission bits it means, whatever umask it was started under:
// std::filesystem::create_directories and mkdir(2) apply the umask, so 000
// leaves a directory anyone may write into (a socket or file planted there),
// and 077 one that a reader such as the container runtime cannot enter.
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace canhazgpu {

// mkdir -p: creates each missing directory of `path` with exactly `mode`.
// Directories already there are left as they are (often not ours to change,
// as /var/run). FailedPrecondition when a component exists and is not a
// directory; the system's reason, naming the path, for anything else.
absl::Status MakeDirectories(const std::string& path, mode_t mode);

}  // namespace canhazgpu
