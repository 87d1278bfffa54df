// The Hub's model revision API (GET /api/models/{repo_id}/revision/{rev}
// ?blobs=true): the commit a revision names and every file of it with the
// hash it is stored under — `lfs.sha256` for large files, `blobId` (git's
// blob SHA-1) for the rest — and HTTP failures turned into one-line
// messages a person can act on. Thread-compatible (HubHttp is per thread).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "hfcache/content_hash.h"
#include "hfcache/hub_http.h"
#include "hfcache/model_ref.h"

namespace canhazgpu::hfcache {

struct RepoFile {
  std::string path;  // "config.json", "sub/dir/x.bin"
  // The blob's name in the cache and the digest its bytes must have.
  std::string hash;
  HashKind kind = HashKind::kGitBlobSha1;
  uint64_t size = 0;
};

struct RepoListing {
  std::string commit;  // 40 hex
  std::vector<RepoFile> files;
};

// Parses the revision API's JSON. InvalidArgument naming the field when it is
// malformed, a path is unsafe or a hash is not hex.
absl::StatusOr<RepoListing> ParseRevisionInfo(std::string_view json, std::string_view repo_id);

// Asks `http` for `ref`'s revision. NotFound / PermissionDenied /
// Unauthenticated / Unavailable with messages from HubError.
absl::StatusOr<RepoListing> FetchRevision(HubHttp& http, const ModelRef& ref);

// The status for a non-2xx Hub response about `ref` (`what`: "file
// config.json" or "revision main"), using the Hub's X-Error-Code header
// (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) when present.
absl::Status HubError(const HubResponse& response, const ModelRef& ref, bool has_token,
                      std::string_view what);

}  // namespace canhazgpu::hfcache
