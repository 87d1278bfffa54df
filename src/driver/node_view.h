// What the node has now, read from its parts: the GPUs (provider), who holds
// or uses them (host store, process table) and their health — turned into
// the NodeDevices that the slices publish and prepares are checked against.
// One read costs a provider query, a store read and a process scan.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "driver/slices.h"
#include "gpu/gpu_health.h"
#include "gpu/gpu_provider.h"
#include "host/process_table.h"
#include "store/state_store.h"

namespace canhazgpu::driver {

struct NodeParts {
  std::string node_name;
  gpu::GpuProvider& provider;
  store::StateStore& store;  // used from several threads: a LockedStateStore
  const host::ProcessTable& processes;
  gpu::HealthMonitor* health = nullptr;  // none: no taints
  uint64_t threshold_bytes = 0;          // busy above this much memory
};

// The devices, withheld ones and taints now; `node_uid` becomes the slices'
// owner. FailedPrecondition when the host store has no GPU pool yet.
absl::StatusOr<NodeDevices> ReadNodeDevices(const NodeParts& parts, const std::string& node_uid);

}  // namespace canhazgpu::driver
