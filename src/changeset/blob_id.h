// Git blob ids computed without a repository (git_odb_hash), so that a plain
// directory - the merge-base exported into a pod, without .git - can be
// checked against the blob ids a change set expects.
//
// Thread safety: pure functions; safe from any thread.
#pragma once

#include <git2.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::changeset {

// The id git gives a blob holding `bytes`.
git_oid BlobIdOf(std::string_view bytes);

// The blob id of what is at `path` without following a final symlink: a
// regular file's bytes, or a symlink's target. nullopt when nothing is
// there; FailedPrecondition for a directory or anything else that git
// cannot store as a blob.
absl::StatusOr<std::optional<git_oid>> BlobIdAt(const std::filesystem::path& path);

}  // namespace canhazgpu::changeset
