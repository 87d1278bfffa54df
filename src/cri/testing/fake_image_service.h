// FakeImageService: a container runtime's CRI ImageService (runtime.v1) on
// a real unix socket, for tests, the simulated cluster and benchmarks. It
// has a "registry" of images that can be pulled (reference -> size, and
// optionally the credentials it demands) and the images already on the
// "node". Pulls can be made to fail with a message, or to stall until the
// test releases them, so a test can observe an image mid-pull without
// sleeping. References are matched exactly (no docker.io/library
// normalisation); an image is also found by its id or a repo digest.
//
// Answers like containerd's: PullImage returns the image id, ImageStatus of
// an absent image is an OK answer without an image, RemoveImage of an
// absent image succeeds; failures are UNKNOWN with containerd's wording.
//
// Threading: all methods may be called from any thread while it serves.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace canhazgpu::cri::testing {

struct RegistryImage {
  uint64_t size = 0;
  // When set, a pull must carry these (as username/password, or as `auth`).
  std::optional<std::string> username;
  std::optional<std::string> password;
};

// "sha256:" + 64 hex digits, the same for the same reference everywhere.
std::string FakeDigest(const std::string& reference);

class FakeImageService {
 public:
  // Serves on `socket_path`, replacing a stale socket file there.
  static absl::StatusOr<std::unique_ptr<FakeImageService>> Start(const std::string& socket_path);
  ~FakeImageService();  // Stop()s

  // Stops serving (stalled pulls are failed) and removes the socket: what
  // a test sees when the runtime goes away. Idempotent.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }

  // The registry: what PullImage can fetch.
  void AddToRegistry(const std::string& reference, RegistryImage image);
  // An image already on the node, as if pulled before.
  void AddPresent(const std::string& reference, uint64_t size);

  // Pulls of `reference` fail with `message` (UNKNOWN) until cleared.
  void FailPulls(const std::string& reference, std::string message);
  void ClearFailure(const std::string& reference);

  // Pulls of `reference` that start from now on wait inside PullImage
  // until ReleasePulls (or Stop, or the caller's deadline).
  void StallPulls(const std::string& reference);
  void ReleasePulls(const std::string& reference);
  // Waits until exactly `count` pulls of `reference` are stalled (0: the
  // callers of stalled pulls gave up); false when that did not happen
  // within `timeout`.
  bool WaitForStalledPulls(const std::string& reference, int count,
                           std::chrono::milliseconds timeout);

  // PullImage calls for `reference` so far, whatever their outcome.
  int pull_count(const std::string& reference) const;
  bool IsPresent(const std::string& reference) const;

  class Service;  // the gRPC handlers, in the .cc

 private:
  struct PresentImage {
    std::string reference;
    uint64_t size = 0;
  };

  FakeImageService() = default;

  // Under mu_: the present image `name` refers to (reference, id or repo
  // digest); nullptr when none.
  const PresentImage* FindLocked(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string socket_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable Mutex mu_;
  std::condition_variable_any changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, RegistryImage> registry_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PresentImage> present_ ABSL_GUARDED_BY(mu_);  // by reference
  std::map<std::string, std::string> failures_ ABSL_GUARDED_BY(mu_);  // reference -> message
  std::set<std::string> stalling_ ABSL_GUARDED_BY(mu_);               // references whose pulls wait
  std::map<std::string, int> stalled_now_ ABSL_GUARDED_BY(mu_);       // reference -> pulls waiting
  std::map<std::string, int> pulls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::cri::testing
