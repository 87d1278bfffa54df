// The thin layer over libgit2 that every module using git shares: the
// process-wide library initialisation, owning handles that free themselves,
// and libgit2's error reports turned into one-line absl::Status messages.
//
// Thread safety: libgit2 objects are not thread-safe; use a handle from one
// thread at a time. Distinct repositories may be used from distinct threads.
#pragma once

#include <git2.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace canhazgpu::git {

// Initialises libgit2 once for the life of the process. Every function here
// calls it; callers of raw libgit2 functions call it first.
void EnsureInitialized();

// The status for a libgit2 call that returned `code` (< 0): "what: libgit2's
// message". GIT_ENOTFOUND maps to NotFound, authentication failures to
// PermissionDenied, everything else to Unavailable or Internal.
absl::Status Error(int code, std::string_view what);

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Handle = std::unique_ptr<T, Deleter<T, Free>>;

using Repository = Handle<git_repository, git_repository_free>;
using Object = Handle<git_object, git_object_free>;
using Commit = Handle<git_commit, git_commit_free>;
using Tree = Handle<git_tree, git_tree_free>;
using TreeEntry = Handle<git_tree_entry, git_tree_entry_free>;
using Blob = Handle<git_blob, git_blob_free>;
using Index = Handle<git_index, git_index_free>;
using Diff = Handle<git_diff, git_diff_free>;
using Reference = Handle<git_reference, git_reference_free>;
using Remote = Handle<git_remote, git_remote_free>;
using StatusList = Handle<git_status_list, git_status_list_free>;
using Odb = Handle<git_odb, git_odb_free>;
using Config = Handle<git_config, git_config_free>;
using Signature = Handle<git_signature, git_signature_free>;

// The repository whose work tree or git directory is `path` exactly.
absl::StatusOr<Repository> Open(const std::filesystem::path& path);
// The repository containing `start`, searching upwards as `git` does.
absl::StatusOr<Repository> Discover(const std::filesystem::path& start);

// 40 lowercase hex digits.
std::string ToHex(const git_oid& oid);
// Accepts exactly 40 hex digits (either case).
absl::StatusOr<git_oid> ParseOid(std::string_view hex);

}  // namespace canhazgpu::git
