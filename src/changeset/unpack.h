// Applies a change set bundle to the repository's files at its base commit,
// so that the result equals the developer's work tree (ignored files
// aside): what the init container of a vLLM pod runs, through `k8shazgpu
// vllm unpack`.
//
// The bundle is read twice (bundle_reader.h): once to check it whole and
// list its entries, keeping no file contents, and once to stream each
// file's contents from the inflater straight into its file, so memory
// stays small whatever the bundle expands to (within BundleLimits).
//
// Thread safety: one call per target directory at a time.
#pragma once

#include <filesystem>
#include <string_view>

#include "absl/status/status.h"
#include "changeset/bundle_reader.h"
#include "changeset/change_set.h"

namespace canhazgpu::changeset {

struct UnpackOptions {
  // Whether each written file is fsynced (with its directory) before the
  // next. Off by default: the pod's workspace is an emptyDir rebuilt from
  // scratch when the pod restarts, so durability buys nothing and costs
  // about 12 ms a file. Writes stay atomic (temporary name, then rename).
  bool sync = false;
  // What the bundle may expand to; tests pass small ones.
  BundleLimits limits;
};

// `base_dir` holds the files of the change set's base commit (a plain
// directory; .git is neither needed nor read). `to_dir` is `base_dir`
// itself (applied in place) or a directory that is missing or empty.
//
// Nothing is written before the whole bundle checked out (checksums,
// paths, limits) and every entry's base was checked: a file whose blob id
// is not the expected one, or present where the base had nothing, fails
// the whole call with FailedPrecondition listing the rejected paths.
//
// Into another directory, the result is built beside or inside `to_dir`
// under a temporary name and moved into place only when complete, so any
// failure - a directory where the bundle wants a file, a full disk - leaves
// `to_dir` as it was. In place there is no second copy to fall back on: a
// local failure midway (named with its path and the system's reason)
// leaves the files written so far, each one whole; callers that need all
// or nothing unpack into a new directory, or remove the result on failure
// as `vllm unpack --mirror` does.
absl::Status Unpack(std::string_view bundle, const std::filesystem::path& base_dir,
                    const std::filesystem::path& to_dir, const UnpackOptions& options = {});

// The same for a bundle whose DecodeIndex(bundle, options.limits) the
// caller already holds as `index` (to check or print it first).
absl::Status UnpackIndexed(std::string_view bundle, const ChangeSet& index,
                           const std::filesystem::path& base_dir,
                           const std::filesystem::path& to_dir, const UnpackOptions& options = {});

}  // namespace canhazgpu::changeset
