// Replacing a file so that a reader — or the next start after a crash — sees
// either the old contents or the new ones, never a mix: write a temporary
// file beside it, fsync it, rename it over the target, fsync the directory.
// Thread-safe for different paths.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace canhazgpu {

// Writes `text` to `path` with permission bits `mode` (0600 for secrets).
// The directory must exist. Unavailable, naming the path and the system's
// reason, when any step fails; the target is then untouched.
absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode);

}  // namespace canhazgpu
