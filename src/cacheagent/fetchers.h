// The node cache agent's three kinds of work, one blocking call each, run
// on the agent's worker threads: an image through the container runtime's
// CRI ImageService, a git repository into its bare mirror, a Hugging Face
// model into the Hub cache layout. Each reports progress as it goes and
// stops when `cancel` turns true. Thread-safe: calls for distinct items may
// run at once (the mirror and the model folder lock themselves).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheagent/credential_policy.h"
#include "cacheplan/types.h"
#include "core/clock.h"
#include "cri/image_client.h"
#include "git/guarded_socket.h"

namespace canhazgpu::cacheagent {

// Where the agent keeps what it caches: <root>/git/<mirror> and
// <root>/hf (HF_HUB_CACHE's layout), both mounted read-only into pods.
inline std::filesystem::path GitRoot(const std::filesystem::path& root) { return root / "git"; }
inline std::filesystem::path HfRoot(const std::filesystem::path& root) { return root / "hf"; }

// A Secret's type, decoded data, and the hosts it is for
// (CredentialHosts).
struct SecretData {
  std::string type;
  std::map<std::string, std::string> data;
  std::vector<std::string> hosts;
};

struct FetchRequest {
  const cacheplan::CacheItem* item = nullptr;
  std::filesystem::path cache_root;
  const Clock* clock = nullptr;
  cri::ImageClient* images = nullptr;  // null: the node has no container runtime configured
  std::string hf_endpoint;
  std::optional<SecretData> secret;  // the item's pull secret, when it has one
  CredentialPolicy credentials;      // where the secret's credential may go
  // Fetch again even when what is on the node would do (a refresh).
  bool refresh = false;
  std::function<void(int64_t done, int64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;
  // A git fetch's connect timeout, low-speed limit and deadline (its
  // cancel is the one above).
  git::TransferLimits git_limits;
};

struct FetchResult {
  std::string digest;    // image
  std::string commit;    // gitRepo, hfModel
  std::string revision;  // hfModel: the revision asked for
  int64_t size_bytes = 0;
  int64_t bytes_pulled = 0;  // what came over the network this time (estimate)
};

absl::StatusOr<FetchResult> FetchImage(const FetchRequest& request);
absl::StatusOr<FetchResult> FetchGitRepo(const FetchRequest& request);
absl::StatusOr<FetchResult> FetchHfModel(const FetchRequest& request);
// Dispatches on the item's type.
absl::StatusOr<FetchResult> Fetch(const FetchRequest& request);

// The folder an item's bytes live in under the cache root (its mirror, or
// the model's folder); empty for images, which the runtime stores.
std::filesystem::path ItemFolder(const std::filesystem::path& cache_root,
                                 const cacheplan::CacheItem& item);

// The server an item's bytes come from, as host[:port] ("github.com",
// "127.0.0.1:8080", the registry of an image, the Hub endpoint's host for
// a model): the agent runs at most workers - 1 pulls from one server.
std::string SourceServer(const cacheplan::CacheItem& item, std::string_view hf_endpoint);

// Bytes of the regular files under `dir` (0 when it is missing).
int64_t FolderBytes(const std::filesystem::path& dir);

}  // namespace canhazgpu::cacheagent
