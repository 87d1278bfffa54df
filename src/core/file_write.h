// Replacing a file or a symlink so that a reader - or the next start after
// a crash - sees either the old one or the new one, never a mix: the new
// one is made under a random temporary name beside it (see atomic_file.h
// for why random and exclusive), then renamed over it. For a file, fsync
// it and then the directory when it must outlive a power loss. Where
// nothing outlives a power loss anyway (a pod's emptyDir, rebuilt from
// scratch), the fsyncs can be left out: readers still never see a mix.
// Thread-safe for different paths.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/atomic_file.h"

namespace canhazgpu {

// Writes `text` to `path` with permission bits exactly `mode` (0600 for
// secrets). The directory must exist. When any step fails the target is
// untouched and the status names the path and the system's reason, coded
// as LocalFileError does: "cannot write /etc/cdi/x.json: Is a directory".
absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode,
                                 FileSync sync = FileSync::kDurable);

// Replaces whatever file or symlink is at `path` with a symlink to
// `target`, so the path never goes missing. Not durable: no caller needs a
// link to outlive a power loss. Errors as WriteFileAtomically's.
absl::Status CreateSymlinkAtomically(const std::string& path, const std::string& target);

}  // namespace canhazgpu
