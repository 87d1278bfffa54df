// The files of one directory as a change set against nothing (issue 33,
// ADR 0017): what `k8shazgpu run` ships so that the command finds the
// project's files in the pod. Every entry is an addition (no base blob)
// under the all-zero base commit, so the bundle unpacks into an empty
// directory with the `vllm unpack --base DIR --to DIR` every node image
// already has.
//
// What is left out, each counted for the summary: `.git` (file or
// directory, at any depth); in a git work tree, what .gitignore (and
// .git/info/exclude, core.excludesFile) ignores - unless tracked - and
// nested repositories; files over the per-file bound; what is neither a
// regular file, a directory nor a symlink (sockets, fifos, devices); and
// what was removed while the walk ran (a build's or an editor's temporary
// files).
// Nothing outside the directory is read: the walk never follows a symlink,
// and a symlink is shipped as the link it is (its target as stored).
//
// Thread safety: functions of the file system only; a repository handle of
// its own per call.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "changeset/change_set.h"

namespace canhazgpu::changeset {

// The base commit of a directory's change set: git's null id, "nothing".
inline constexpr char kNoBaseCommit[] = "0000000000000000000000000000000000000000";

struct DirectoryOptions {
  // A file bigger than this is left out (and listed), not shipped.
  uint64_t max_file_size = uint64_t{1} << 20;
  // Past either, the walk stops with ResourceExhausted before reading any
  // file's contents: $HOME is not a project.
  uint64_t max_files = 20'000;
  uint64_t max_total_size = uint64_t{64} << 20;
};

struct DirectoryFiles {
  ChangeSet change_set;  // base kNoBaseCommit; files and symlinks, sorted
  // The git work tree's top the directory is in; empty when in none.
  std::filesystem::path git_top;
  int ignored = 0;       // paths .gitignore left out (a directory counts once)
  int git_dirs = 0;      // .git entries left out
  int nested_repos = 0;  // directories holding another repository
  int special = 0;       // sockets, fifos, devices
  int vanished = 0;      // removed between the walk and the read
  // The symlinks whose target is outside the directory, by path.
  std::vector<std::string> outward_links;
  // Files over max_file_size: how many, and the biggest of them (at most
  // kBiggestShown), largest first.
  int too_big = 0;
  std::vector<Contributor> biggest_left_out;
};

// The files under `dir` as described above. ResourceExhausted (one line,
// naming the biggest files) past `options`' walk limits; the error of the
// first file that cannot be read otherwise.
absl::StatusOr<DirectoryFiles> CollectDirectory(const std::filesystem::path& dir,
                                                const DirectoryOptions& options = {});

}  // namespace canhazgpu::changeset
