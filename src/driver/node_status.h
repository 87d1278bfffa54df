// The node's NodeGpuStatus (canhazgpu.dev/v1alpha1, deploy/crds): what each
// device is doing as the node's host store sees it — free, held by a local
// user, prepared for claims, busy without a reservation — with its usage and
// taints, for `kubectl get ngs` and the cluster CLI's explanations. The
// writer sends the status only when it changed (or at the periodic refresh,
// so that an old updateTime means the daemon is gone).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "core/clock.h"
#include "driver/node_view.h"
#include "kube/client.h"
#include "kube/objects_gpu_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::driver {

using kube::kNodeGpuStatuses;

// The whole object, named after the node and owned by it (`node_uid`, when
// known), status included.
kube::NodeGpuStatus NodeGpuStatusObject(const std::string& node, const std::string& node_uid,
                                        const NodeView& view, TimePoint now);

class NodeStatusWriter {
 public:
  // `client` must outlive the writer. Not thread-safe.
  explicit NodeStatusWriter(kube::Client& client) : client_(client) {}

  // Creates the object when it is missing and writes its status when it
  // differs from the last one written (updateTime aside) or `refresh`.
  absl::Status Write(const kube::NodeGpuStatus& object, bool refresh);

 private:
  kube::Client& client_;
  std::optional<nlohmann::json> last_status_;  // without updateTime
};

}  // namespace canhazgpu::driver
