// The lossless change set of a git work tree against a base commit (issue
// 18, ADR 0009): every path whose content, mode or kind differs between the
// base commit's tree and the files on disk - commits not pushed, staged and
// unstaged edits, untracked files that are not ignored, deletions, renames
// (a deletion plus an addition), mode changes, binary files and symlinks -
// as whole files with the base blob each one expects. The bytes are read
// from disk, so what is packed is exactly what the developer has. Also the
// summary printed by `k8shazgpu vllm package` and the compiled-code check.
//
// Thread safety: plain values and pure functions; CollectChangeSet opens its
// own repository handle, so distinct calls may run on distinct threads.
#pragma once

#include <git2.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::changeset {

// What a path becomes in the work tree.
enum class EntryKind : uint8_t { kDeleted = 0, kFile = 1, kSymlink = 2 };

struct ChangeEntry {
  std::string path;  // relative to the work tree's top, '/'-separated
  // The blob the base commit has at `path` (a file's bytes or a symlink's
  // target); nullopt when the base has nothing there.
  std::optional<git_oid> base_blob;
  EntryKind kind = EntryKind::kDeleted;
  uint32_t mode = 0;  // kFile: 0644 or 0755
  std::string data;   // kFile: the bytes; kSymlink: the target
};

struct ChangeSet {
  std::string base_commit;           // 40 hex digits
  std::vector<ChangeEntry> entries;  // sorted by path, one per path
  // Paths left out on purpose, one line each ("submodule third_party/x
  // skipped: submodules are not packed").
  std::vector<std::string> notes;
};

// Everything between `base_commit`'s tree and the work tree of the
// repository whose top level is `work_tree`. Submodules (and nested
// repositories in untracked directories) are skipped with a note: vLLM has
// none, and their content is not in this repository's objects.
absl::StatusOr<ChangeSet> CollectChangeSet(const std::filesystem::path& work_tree,
                                           const std::string& base_commit);

struct Contributor {
  std::string path;
  uint64_t bytes = 0;
};

struct Summary {
  std::string base_commit;
  int added = 0;     // the base has nothing at the path
  int modified = 0;  // content, mode or kind changed
  int deleted = 0;
  int symlinks = 0;                  // of added + modified, how many are symlinks
  uint64_t bytes = 0;                // file bytes and symlink targets, uncompressed
  std::vector<Contributor> biggest;  // largest first, at most kBiggestShown
  std::vector<std::string> notes;
};
inline constexpr int kBiggestShown = 5;

Summary Summarize(const ChangeSet& change_set);
// Several lines for a person: the base, the counts, the biggest files and
// the notes; ends with a newline.
std::string FormatSummary(const Summary& summary);

// The paths whose change needs vLLM rebuilt rather than its Python package
// overlaid: anything under csrc/ or cmake/, C, C++ and CUDA sources and
// headers (.c .cc .cpp .cu .cuh .h .hpp), any CMakeLists.txt, setup.py.
// Sorted.
std::vector<std::string> TouchesCompiledCode(const ChangeSet& change_set);

// "1.5 KiB", "40.2 MiB": bytes for people, one decimal above KiB.
std::string FormatBytes(uint64_t bytes);

}  // namespace canhazgpu::changeset
