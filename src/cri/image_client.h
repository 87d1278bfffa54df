// ImageClient: the node's side of the CRI ImageService (runtime.v1) over
// the container runtime's unix socket — containerd and CRI-O alike. Each
// call has a deadline (pulls a long one, vLLM images are many GB); errors
// are absl::Status with one-line messages naming the runtime's endpoint:
//   - runtime unreachable (no socket, nobody listening, it went away):
//     Unavailable "no container runtime at unix:///run/….sock: …"
//   - a refused pull: the runtime's own message ("pulling IMAGE through
//     unix:///…: failed to pull and unpack image …: 401 Unauthorized")
//   - no answer in time: DeadlineExceeded "… gave no answer within N s".
//
// Threading: every method may be called from several threads at once (one
// gRPC channel, one call per request); a pull blocks only its own caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "cri/registry_auth.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace canhazgpu::cri {

// An image as the runtime reports it.
struct ImageInfo {
  std::string id;  // "sha256:<64 hex>"
  std::vector<std::string> repo_tags;
  std::vector<std::string> repo_digests;  // "repo@sha256:…"
  uint64_t size = 0;                      // bytes, unpacked

  bool operator==(const ImageInfo&) const = default;
};

// One filesystem the runtime keeps images on.
struct ImageFsUsage {
  std::string mountpoint;
  uint64_t used_bytes = 0;
  uint64_t inodes_used = 0;
};

struct ImageClientOptions {
  // ListImages, ImageStatus, RemoveImage, ImageFsInfo: the kubelet's
  // default runtime request timeout.
  std::chrono::milliseconds call_timeout{120'000};
  // PullImage.
  std::chrono::milliseconds pull_timeout{3'600'000};
};

class ImageClient {
 public:
  // `socket_path` is a filesystem path (see runtime_socket.h). Connects
  // lazily: a runtime that is not up yet is an error of the first call,
  // not of this.
  explicit ImageClient(std::string socket_path, ImageClientOptions options = {});
  ~ImageClient();

  // "unix:///run/containerd/containerd.sock".
  const std::string& endpoint() const { return endpoint_; }

  // Pulls `image`, with `auth` when the registry needs it; returns what the
  // runtime calls the result (an image id or a repo digest).
  absl::StatusOr<std::string> Pull(const std::string& image,
                                   const std::optional<RegistryAuth>& auth = std::nullopt);

  // The image `image` names (a reference or an id); nullopt when the
  // runtime does not have it.
  absl::StatusOr<std::optional<ImageInfo>> Status(const std::string& image);

  absl::StatusOr<std::vector<ImageInfo>> List();

  // Removes `image`; removing an absent image succeeds.
  absl::Status Remove(const std::string& image);

  absl::StatusOr<std::vector<ImageFsUsage>> FsInfo();

  // Ends every Pull in flight now, with Cancelled: for shutting down, or
  // when the image is no longer wanted. The runtime may finish the pull
  // on its own anyway. Pulls started afterwards are not affected.
  void CancelPulls();

 private:
  class Stub;  // the generated stub, kept out of this header

  std::string endpoint_;
  ImageClientOptions options_;
  std::unique_ptr<Stub> stub_;
  Mutex mu_;
  std::set<grpc::ClientContext*> pulls_ ABSL_GUARDED_BY(mu_);  // in flight
};

}  // namespace canhazgpu::cri
