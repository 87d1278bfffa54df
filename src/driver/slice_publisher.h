// Keeps the API server's ResourceSlices of one node and driver equal to what
// BuildSlices() makes of the node's devices: nothing is written when they
// already match; on any change the pool's generation goes up, stale slices
// are deleted first (consumers only use a pool's highest generation, so the
// pool is never seen half old and half new), and the rest are created or
// updated. Nothing is sent that the API server would reject. Not
// thread-safe: one publisher per node, called from one thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "driver/slices.h"
#include "kube/client.h"

namespace canhazgpu::driver {

struct PublishResult {
  bool changed = false;  // slices were written
  int64_t generation = 0;
  size_t slices = 0;
  std::vector<std::string> dropped;  // attributes left out (BuiltSlices::dropped)
};

class SlicePublisher {
 public:
  // `client` must outlive the publisher.
  explicit SlicePublisher(kube::Client& client) : client_(client) {}

  // Reads the node's slices (or, when this publisher wrote them last and
  // not `verify`, uses what the server answered then), then writes what
  // differs. An error leaves the
  // API partly updated at worst; the next call finishes the job. When the
  // devices are what this publisher last published successfully, nothing
  // is read or written unless `verify` (the periodic resync, which repairs
  // slices someone else changed or deleted).
  absl::StatusOr<PublishResult> Publish(const NodeDevices& devices, bool verify = true);

  // Deletes every slice of the node and driver (the daemon's uninstall).
  absl::Status Unpublish(const std::string& node, const std::string& driver);

 private:
  absl::StatusOr<nlohmann::json> ListSlices(const std::string& node, const std::string& driver);
  // Publish's work, from `known` (the slices as last written) or, without
  // it, from a list.
  absl::StatusOr<PublishResult> Write(const NodeDevices& devices,
                                      std::optional<nlohmann::json> known);

  kube::Client& client_;
  // What the last successful Publish left in the API (its slices at their
  // generation): a repeat of the same devices costs no request.
  std::optional<PublishResult> last_;
  std::vector<nlohmann::json> last_slices_;
  // The node's slices as the server answered the last successful Publish.
  std::optional<std::vector<nlohmann::json>> written_;
};

}  // namespace canhazgpu::driver
