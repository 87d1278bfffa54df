// What a Hugging Face model download names — repository, revision, which
// files — and the checks that keep a hostile or mistyped name from reaching
// a URL or a path on disk: repository ids, revisions, file paths inside the
// repository, and allow patterns with huggingface_hub's fnmatch semantics.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace canhazgpu::hfcache {

struct ModelRef {
  std::string repo_id;            // "org/name"
  std::string revision = "main";  // a branch, a tag or a 40-hex commit
  // fnmatch globs as huggingface_hub's allow_patterns ("*.json", "tokenizer*",
  // "subdir/" meaning "subdir/*"); empty means every file.
  std::vector<std::string> allow_patterns;
};

// InvalidArgument, naming the id and the rule, unless `repo_id` is
// "org/name" with each part of [A-Za-z0-9._-], not starting or ending with
// '.' or '-', no "--" or "..", at most 96 characters (the Hub's rules).
absl::Status ValidateRepoId(std::string_view repo_id);

// InvalidArgument unless `revision` is usable as a URL segment and as a path
// under refs/: non-empty, no "..", no empty or "." segments, no
// backslash or control characters, no leading '/'.
absl::Status ValidateRevision(std::string_view revision);

// A file path as listed by the Hub ("config.json", "sub/dir/x.bin"):
// InvalidArgument for absolute paths, "..", "." or empty segments, or
// backslashes, so a listing cannot write outside the snapshot.
absl::Status ValidateRepoFilePath(std::string_view path);

// 40 lowercase hex digits: the revision already is a commit.
bool IsCommitHash(std::string_view revision);

// "models--org--name": the repository's folder in the Hub cache.
std::string RepoFolderName(std::string_view repo_id);

// Whether `path` is selected by `patterns` (empty selects everything), as
// huggingface_hub's filter_repo_objects: Python fnmatch, where '*' also
// matches '/', and a pattern ending in '/' matches everything below it.
bool MatchesAllowPatterns(std::string_view path, const std::vector<std::string>& patterns);

}  // namespace canhazgpu::hfcache
