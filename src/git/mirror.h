// The node's repository cache: one bare mirror per repository URL under a
// cache root, holding every branch and tag of the remote, fetched with
// libgit2 (no `git` process).
//
// Crash safety: a mirror is created in a temporary directory beside its
// final name and renamed into place once initialised, so a directory with
// the final name is a complete mirror; one that cannot be opened as the
// mirror of its URL (a half-created one from an older layout, a damaged
// one) is removed and created again. libgit2 writes packs and refs through
// temporary files and lock files that it renames, so a fetch cut short
// leaves the previous refs; the lock files it leaves behind are removed by
// the next fetch, which holds an flock on the mirror while it runs.
//
// Layout of the cache root: <MirrorDirName(url)>/ (the bare repository, with
// canhazgpu-last-fetch in it) and .<MirrorDirName(url)>.lock beside it, the
// flock that creation, fetches and RemoveMirror take. The lock file stays
// when a mirror is removed: deleting it could let two holders in.
//
// Thread safety: a Mirror is used from one thread at a time. Fetches of the
// same mirror from different Mirror objects or processes wait for each
// other (flock). Distinct mirrors may be used concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/clock.h"
#include "git/credentials.h"
#include "git/git.h"
#include "git/guarded_socket.h"

namespace canhazgpu::git {

// The directory name of the mirror of `url`: its host and path made safe
// for a file name (user names and passwords left out, at most 80
// characters), then "-" and 8 hex digits of a hash of the exact URL, e.g.
// "github.com-vllm-project-vllm-1f2e3d4c". Distinct URLs (forks, another
// host, another spelling) get distinct directories; stable across releases.
std::string MirrorDirName(std::string_view url);

struct FetchProgress {
  uint64_t received_bytes = 0;
  uint32_t received_objects = 0;
  uint32_t indexed_objects = 0;
  uint32_t total_objects = 0;  // 0 until the server has said
};

struct FetchOptions {
  const GitCredentials* credentials = nullptr;  // null: anonymous
  // Called from the fetching thread as data arrives; keep it cheap.
  std::function<void(const FetchProgress&)> progress;
  // When set to true (from any thread), the fetch stops at its next
  // progress report and returns Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Connect timeout, low-speed limit and deadline of the transfer; its
  // `cancel` is the one above.
  TransferLimits limits;
};

// Removes the mirror of `url` under `root` (garbage collection), waiting for
// a fetch of it in progress to end. OK when there is none. Mirror objects of
// that URL must not be used afterwards; the caller (the node cache agent)
// ensures none is.
absl::Status RemoveMirror(const std::filesystem::path& root, std::string_view url);

class Mirror {
 public:
  // Opens the mirror of `url` under `root` (created if missing), creating
  // it without fetching if there is none. `clock` stamps fetches and must
  // outlive the Mirror.
  static absl::StatusOr<Mirror> OpenOrCreate(const std::filesystem::path& root,
                                             std::string_view url, const canhazgpu::Clock& clock);

  // Brings every branch and tag of the remote into the mirror
  // (+refs/heads/*:refs/heads/*, +refs/tags/*:refs/tags/*), removing those
  // the remote no longer has. Errors: PermissionDenied "authentication
  // failed for URL: ..." (or "URL requires authentication; ..."),
  // Unavailable naming the URL when the server cannot be reached,
  // Cancelled.
  absl::Status Fetch(const FetchOptions& options);

  // The commit id (40 hex) that `rev` names: a branch, a tag (annotated
  // tags peeled), "refs/..." in full, or a full commit id, which must be in
  // the mirror. NotFound with what to do otherwise.
  absl::StatusOr<std::string> Resolve(std::string_view rev) const;
  // Whether the commit with id `hex` (40 hex digits) is in the mirror.
  bool HasCommit(std::string_view hex) const;
  // When the last successful fetch finished; nullopt before the first.
  std::optional<canhazgpu::TimePoint> LastFetch() const;

  const std::filesystem::path& path() const { return path_; }
  const std::string& url() const { return url_; }
  git_repository* repository() const { return repository_.get(); }

 private:
  Mirror(std::filesystem::path path, std::string url, Repository repository,
         const canhazgpu::Clock* clock)
      : path_(std::move(path)),
        url_(std::move(url)),
        repository_(std::move(repository)),
        clock_(clock) {}

  std::filesystem::path path_;
  std::string url_;
  Repository repository_;
  const canhazgpu::Clock* clock_;
};

}  // namespace canhazgpu::git
