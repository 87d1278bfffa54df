// Applies a change set bundle to the repository's files at its base commit,
// so that the result equals the developer's work tree (ignored files
// aside): what the init container of a vLLM pod runs, through `k8shazgpu
// vllm unpack`.
//
// Thread safety: one call per target directory at a time.
#pragma once

#include <filesystem>
#include <string_view>

#include "absl/status/status.h"
#include "changeset/change_set.h"

namespace canhazgpu::changeset {

struct UnpackOptions {
  // Whether each written file is fsynced (with its directory) before the
  // next. Off by default: the pod's workspace is an emptyDir rebuilt from
  // scratch when the pod restarts, so durability buys nothing and costs
  // about 12 ms a file. Writes stay atomic (temporary name, then rename).
  bool sync = false;
};

// `base_dir` holds the files of the change set's base commit (a plain
// directory; .git is neither needed nor read). `to_dir` is `base_dir`
// itself (applied in place) or a directory that is missing or empty, into
// which base_dir is copied first, modes and symlinks kept.
//
// Every entry's base is checked before anything is written: a file whose
// blob id is not the expected one, or present where the base had nothing,
// fails the whole call with FailedPrecondition listing the rejected paths,
// and `to_dir` is left untouched. Files are written whole through a
// temporary name, so a crash of the process leaves no half-written file.
absl::Status Unpack(std::string_view bundle, const std::filesystem::path& base_dir,
                    const std::filesystem::path& to_dir, const UnpackOptions& options = {});

// The same for a decoded change set.
absl::Status Apply(const ChangeSet& change_set, const std::filesystem::path& base_dir,
                   const std::filesystem::path& to_dir, const UnpackOptions& options = {});

}  // namespace canhazgpu::changeset
