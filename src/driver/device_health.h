// GPU health (gpu/gpu_health.h) as the node driver publishes it: device
// taints on the ResourceSlices, and the per-device states of the kubelet's
// DRAResourceHealth stream (reference/dra.md §1c). A MIG device has its
// parent GPU's health. Pure functions; thread-safe.
//
// Taints, one per key (a GPU with a fatal and an informational XID carries
// the fatal one):
//   gpu.canhazgpu.dev/xid                     value = XID   NoSchedule (fatal) or None
//   gpu.canhazgpu.dev/gpu-lost                              NoExecute
//   gpu.canhazgpu.dev/ecc-retirement-pending                NoSchedule
//   gpu.canhazgpu.dev/unmonitored                           None
// timeAdded is when the problem began, so republishing does not churn.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dra/devices.h"
#include "driver/health_source.h"
#include "driver/slices.h"
#include "gpu/gpu_health.h"

namespace canhazgpu::driver {

inline constexpr char kXidTaintKey[] = "gpu.canhazgpu.dev/xid";
inline constexpr char kGpuLostTaintKey[] = "gpu.canhazgpu.dev/gpu-lost";
inline constexpr char kEccRetirementPendingTaintKey[] = "gpu.canhazgpu.dev/ecc-retirement-pending";
inline constexpr char kUnmonitoredTaintKey[] = "gpu.canhazgpu.dev/unmonitored";

// The kubelet truncates longer messages; ours are cut before they get there.
inline constexpr size_t kMaxHealthMessageBytes = 1024;

// The taints of one GPU's problems, sorted by key.
std::vector<Taint> GpuTaints(const gpu::GpuHealth& gpu);

// Fatal problems: unhealthy; otherwise unmonitored: unknown; otherwise
// (informational XIDs at most) healthy. The message joins the problems'
// messages, fatal ones first.
DeviceHealth GpuDeviceHealth(const gpu::GpuHealth& gpu);

// The taints of every device of `pool` whose GPU has any, by device name.
std::map<std::string, std::vector<Taint>> DeviceTaints(const dra::DevicePool& pool,
                                                       const gpu::HealthSnapshot& health);

// The health of every device of `pool`, in pool order. A device whose GPU
// the snapshot lacks is unknown.
std::vector<DeviceHealth> DeviceHealths(const dra::DevicePool& pool,
                                        const gpu::HealthSnapshot& health);

}  // namespace canhazgpu::driver
