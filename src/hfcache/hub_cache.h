// The Hugging Face hub cache on disk, laid out exactly as huggingface_hub
// does so vLLM finds a model with HF_HUB_OFFLINE=1 and HF_HUB_CACHE=<root>:
//
//   <root>/models--org--name/
//     blobs/<hash>                  the file's bytes; <hash> is the LFS
//                                   sha256 or the git blob sha1 (the Hub's
//                                   ETag); <hash>.incomplete while it downloads
//     snapshots/<commit>/<path>     relative symlink to ../../blobs/<hash>
//                                   (one more ../ per directory in <path>)
//     refs/<revision>               the commit, no newline; only for named
//                                   revisions (branches, tags)
//
// Completeness (ours; huggingface_hub ignores the folder): a blob exists
// under its final name only after its bytes were verified against <hash>
// (downloads rename <hash>.incomplete into place), and
// .canhazgpu/complete/<commit>.json, the revision's full file listing, is
// written only after every selected file was verified and linked, and before
// refs/<revision> is moved to the commit. FindCached then re-checks every
// selected file's link and blob size, so a snapshot missing a file or a
// pattern never downloaded is never reported ready.
//
// Thread-safe for distinct repositories; Download serializes work on one
// repository with a lock file (.canhazgpu/lock).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hfcache/hub_api.h"
#include "hfcache/model_ref.h"

namespace canhazgpu::hfcache {

// A revision's files present in the cache.
struct ModelSnapshot {
  std::string repo_id;
  std::string commit;
  std::filesystem::path snapshot_dir;  // <root>/models--org--name/snapshots/<commit>
  std::vector<RepoFile> files;         // the selected files
  uint64_t size_bytes = 0;             // their total size
};

// Paths of one repository's cache folder. Arguments must be validated.
class RepoCache {
 public:
  // `durable`: refs and completion records are fsynced (with their
  // directory) before they count; off only when blobs are not synced either
  // (DownloadOptions::sync_blobs), since on ext4 one small fsync also
  // flushes every blob still in the page cache.
  RepoCache(const std::filesystem::path& root, std::string_view repo_id, bool durable = true);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path BlobPath(std::string_view hash) const;
  std::filesystem::path IncompletePath(std::string_view hash) const;
  std::filesystem::path SnapshotDir(std::string_view commit) const;
  std::filesystem::path RefPath(std::string_view revision) const;
  std::filesystem::path ManifestPath(std::string_view commit) const;
  std::filesystem::path LockPath() const;

  // "../../blobs/<hash>", with one more "../" per '/' in `file_path`.
  static std::string LinkTarget(std::string_view file_path, std::string_view hash);

  // Points snapshots/<commit>/<file.path> at the file's blob (replacing any
  // link there), creating directories as needed.
  absl::Status Link(std::string_view commit, const RepoFile& file) const;
  // Whether snapshots/<commit>/<file.path> links to a blob of the right size.
  bool HasFile(std::string_view commit, const RepoFile& file) const;

  // refs/<revision> := commit, atomically.
  absl::Status WriteRef(std::string_view revision, std::string_view commit) const;
  // NotFound when there is no ref.
  absl::StatusOr<std::string> ReadRef(std::string_view revision) const;

  absl::Status WriteManifest(const RepoListing& listing) const;
  // NotFound when the commit was never completed.
  absl::StatusOr<RepoListing> ReadManifest(std::string_view commit) const;

 private:
  absl::Status Replace(const std::filesystem::path& path, std::string_view text) const;

  std::filesystem::path dir_;
  bool durable_;
};

// Whether `ref` (repository, revision, allow patterns) is complete in the
// cache under `root`, without the network: the revision's commit from
// refs/ (or the revision itself when it is a commit), its completion record,
// and every selected file linked to a blob of the listed size. NotFound with
// the reason when it is not; InvalidArgument for a bad id or revision.
absl::StatusOr<ModelSnapshot> FindCached(const std::filesystem::path& root, const ModelRef& ref);

}  // namespace canhazgpu::hfcache
