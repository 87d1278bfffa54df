// Replacing a file so that a reader — or the next start after a crash — sees
// either the old contents or the new ones, never a mix: write a temporary
// file beside it, fsync it, rename it over the target, fsync the directory.
// Where nothing outlives a power loss anyway (a pod's emptyDir, rebuilt from
// scratch), the fsyncs can be left out: readers still never see a mix.
// Thread-safe for different paths.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace canhazgpu {

// Whether the write must survive a power loss (two fsyncs, about 12 ms a
// file on a loaded VM) or only be atomic for readers on a running system.
enum class FileSync { kDurable, kAtomicOnly };

// Writes `text` to `path` with permission bits `mode` (0600 for secrets).
// The directory must exist. Unavailable, naming the path and the system's
// reason, when any step fails; the target is then untouched.
absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode,
                                 FileSync sync = FileSync::kDurable);

}  // namespace canhazgpu
