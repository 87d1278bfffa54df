// Writes one commit's tree into a plain directory: what a pod's init
// container builds its workspace from (the merge-base of a developer's vLLM
// checkout, taken from the node's mirror).
//
// The result holds exactly the commit's files: their bytes, mode 0644 or
// 0755 (whatever the umask), symbolic links as links, submodules as empty
// directories (as `git archive` does), and no .git. It is written into a
// temporary directory beside `dest` and renamed to `dest` at the end, so a
// directory named `dest` is always a complete export; temporary directories
// left by an interrupted export are removed by the next one. Files are not
// fsynced: the export lives in a pod's scratch volume, which a node crash
// takes away anyway.
//
// Speed: directories and links are made on the calling thread, then files
// are written by up to one thread per core (8 at most, one per 256 files),
// each with its own repository handle (docs/perf.md: 3,000 files).
//
// Thread safety: exports to distinct destinations may run concurrently.
#pragma once

#include <filesystem>
#include <string_view>

#include "absl/status/status.h"

namespace canhazgpu::git {

// Exports commit `commit_hex` (40 hex digits) of the repository at
// `repository` (bare or not) into `dest`, which must not exist; its parent
// must. Errors: NotFound when the commit is not in the repository,
// AlreadyExists when `dest` exists, InvalidArgument for a tree entry that
// would escape the directory ("..", ".git", a '/' in a name).
absl::Status ExportCommit(const std::filesystem::path& repository, std::string_view commit_hex,
                          const std::filesystem::path& dest);

}  // namespace canhazgpu::git
