// What the node has now, read from its parts: the GPUs (provider), who holds
// or uses them (host store, process table) and their health — turned into
// the NodeDevices that the slices publish and prepares are checked against.
// One read costs a provider query, a store read and a process scan.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "alloc/gpu_status.h"
#include "driver/host_queue.h"
#include "driver/shared_gpus.h"
#include "driver/slices.h"
#include "gpu/gpu_health.h"
#include "gpu/gpu_provider.h"
#include "host/process_table.h"
#include "store/state_store.h"

namespace canhazgpu::driver {

struct NodeParts {
  std::string node_name;
  gpu::GpuProvider& provider;
  store::StateStore& store;  // used from several threads: a Locked- or ReopeningStateStore
  const host::ProcessTable& processes;
  gpu::HealthMonitor* health = nullptr;  // none: no taints
  uint64_t threshold_bytes = 0;          // busy above this much memory
  SharingOptions sharing;                // off: every GPU for exclusive use
};

// One reading of the node.
struct NodeView {
  NodeDevices devices;                     // what the slices publish
  std::vector<alloc::GpuStatus> statuses;  // each GPU: held, prepared, busy, free
  // GPU index -> what local waiters keep of it from the cluster.
  std::map<int, std::vector<QueueKeep>> kept_for_queue;
  std::string driver_version;  // of the GPU driver, when known
};

// The node now; `node_uid` becomes the slices' owner. FailedPrecondition
// when the host store has no GPU pool yet.
absl::StatusOr<NodeView> ReadNode(const NodeParts& parts, const std::string& node_uid);

}  // namespace canhazgpu::driver
