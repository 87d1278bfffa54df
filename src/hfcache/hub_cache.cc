#include "hfcache/hub_cache.h"

#include <system_error>

#include "core/file_read.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::hfcache {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxManifestBytes = 64u << 20;

absl::Status CreateDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(StrCat("cannot create ", dir.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

RepoCache::RepoCache(const fs::path& root, std::string_view repo_id, bool durable)
    : dir_(root / RepoFolderName(repo_id)), durable_(durable) {}

absl::Status RepoCache::Replace(const fs::path& path, std::string_view text) const {
  RETURN_IF_ERROR(CreateDirs(path.parent_path()));
  return WriteFileAtomically(path.string(), text, 0644,
                             durable_ ? FileSync::kDurable : FileSync::kAtomicOnly);
}

fs::path RepoCache::BlobPath(std::string_view hash) const {
  return dir_ / "blobs" / std::string(hash);
}

fs::path RepoCache::IncompletePath(std::string_view hash) const {
  return dir_ / "blobs" / StrCat(std::string(hash), ".incomplete");
}

fs::path RepoCache::SnapshotDir(std::string_view commit) const {
  return dir_ / "snapshots" / std::string(commit);
}

fs::path RepoCache::RefPath(std::string_view revision) const {
  return dir_ / "refs" / std::string(revision);
}

fs::path RepoCache::ManifestPath(std::string_view commit) const {
  return dir_ / ".canhazgpu" / "complete" / StrCat(std::string(commit), ".json");
}

fs::path RepoCache::LockPath() const { return dir_ / ".canhazgpu" / "lock"; }

std::string RepoCache::LinkTarget(std::string_view file_path, std::string_view hash) {
  std::string target = "../../";
  for (char c : file_path) {
    if (c == '/') target += "../";
  }
  return StrCat(target, "blobs/", std::string(hash));
}

absl::Status RepoCache::Link(std::string_view commit, const RepoFile& file) const {
  const fs::path link = SnapshotDir(commit) / file.path;
  RETURN_IF_ERROR(CreateDirs(link.parent_path()));
  // A new link beside the old one, renamed over it: never a moment without.
  return CreateSymlinkAtomically(link.string(), LinkTarget(file.path, file.hash));
}

bool RepoCache::HasFile(std::string_view commit, const RepoFile& file) const {
  const fs::path link = SnapshotDir(commit) / file.path;
  std::error_code ec;
  if (!fs::is_symlink(link, ec) || fs::read_symlink(link, ec) != LinkTarget(file.path, file.hash)) {
    return false;
  }
  const fs::path blob = BlobPath(file.hash);
  return fs::is_regular_file(blob, ec) && fs::file_size(blob, ec) == file.size && !ec;
}

absl::Status RepoCache::WriteRef(std::string_view revision, std::string_view commit) const {
  return Replace(RefPath(revision), commit);
}

absl::StatusOr<std::string> RepoCache::ReadRef(std::string_view revision) const {
  ASSIGN_OR_RETURN(std::string commit, ReadRegularFile(RefPath(revision).string(), 4096, "ref"));
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == ' ')) commit.pop_back();
  if (!IsCommitHash(commit)) {
    return absl::NotFoundError(StrCat(RefPath(revision).string(), " holds no commit"));
  }
  return commit;
}

absl::Status RepoCache::WriteManifest(const RepoListing& listing) const {
  nlohmann::json files = nlohmann::json::array();
  for (const RepoFile& file : listing.files) {
    files.push_back({{"path", file.path},
                     {"hash", file.hash},
                     {"lfs", file.kind == HashKind::kSha256},
                     {"size", file.size}});
  }
  const nlohmann::json doc = {{"commit", listing.commit}, {"files", files}};
  return Replace(ManifestPath(listing.commit), doc.dump(1));
}

absl::StatusOr<RepoListing> RepoCache::ReadManifest(std::string_view commit) const {
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(ManifestPath(commit).string(),
                                                     kMaxManifestBytes, "completion record"));
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  RepoListing listing;
  if (!doc.is_object() || !doc.contains("files") || !doc["files"].is_array()) {
    return absl::NotFoundError(StrCat(ManifestPath(commit).string(), " is damaged"));
  }
  listing.commit = std::string(commit);
  for (const nlohmann::json& entry : doc["files"]) {
    RepoFile file;
    file.path = entry.value("path", "");
    file.hash = entry.value("hash", "");
    file.kind = entry.value("lfs", false) ? HashKind::kSha256 : HashKind::kGitBlobSha1;
    file.size = entry.value("size", uint64_t{0});
    if (!ValidateRepoFilePath(file.path).ok() || file.hash.empty()) {
      return absl::NotFoundError(StrCat(ManifestPath(commit).string(), " is damaged"));
    }
    listing.files.push_back(std::move(file));
  }
  return listing;
}

absl::StatusOr<ModelSnapshot> FindCached(const fs::path& root, const ModelRef& ref) {
  RETURN_IF_ERROR(ValidateRepoId(ref.repo_id));
  RETURN_IF_ERROR(ValidateRevision(ref.revision));
  const RepoCache cache(root, ref.repo_id);
  const std::string name = StrCat(ref.repo_id, "@", ref.revision);
  std::string commit = ref.revision;
  if (!IsCommitHash(ref.revision)) {
    absl::StatusOr<std::string> from_ref = cache.ReadRef(ref.revision);
    if (!from_ref.ok()) {
      return absl::NotFoundError(StrCat(name, " is not cached (no refs/", ref.revision, ")"));
    }
    commit = *from_ref;
  }
  absl::StatusOr<RepoListing> listing = cache.ReadManifest(commit);
  if (!listing.ok()) {
    return absl::NotFoundError(
        StrCat(name, " is not completely cached (commit ", commit, " never finished)"));
  }
  ModelSnapshot snapshot{
      .repo_id = ref.repo_id, .commit = commit, .snapshot_dir = cache.SnapshotDir(commit)};
  for (RepoFile& file : listing->files) {
    if (!MatchesAllowPatterns(file.path, ref.allow_patterns)) continue;
    if (!cache.HasFile(commit, file)) {
      return absl::NotFoundError(
          StrCat(name, " is not completely cached (", file.path, " is missing or incomplete)"));
    }
    snapshot.size_bytes += file.size;
    snapshot.files.push_back(std::move(file));
  }
  if (snapshot.files.empty()) {
    return absl::NotFoundError(StrCat(name, ": no file matches the allow patterns"));
  }
  return snapshot;
}

}  // namespace canhazgpu::hfcache
