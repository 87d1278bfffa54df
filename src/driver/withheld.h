// Which devices the node must not offer to the cluster now: those of a GPU a
// local user holds (a canhazgpu reservation), one busy without any
// reservation, or one whose state cannot be read. A GPU prepared for a
// Kubernetes claim stays published: the scheduler knows it is allocated, and
// withdrawing it on every prepare would rewrite the slices for nothing. A
// MIG instance goes with its GPU. On a node that shares GPUs by memory
// (`sharing`), a GPU held only by shares stays published while its device
// may be shared: what local shares hold comes off its capacity instead
// (shared_gpus.h). Pure.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "alloc/gpu_status.h"
#include "dra/devices.h"

namespace canhazgpu::driver {

std::set<std::string> WithheldDevices(const dra::DevicePool& pool,
                                      const std::vector<alloc::GpuStatus>& statuses,
                                      bool sharing = false);

}  // namespace canhazgpu::driver
