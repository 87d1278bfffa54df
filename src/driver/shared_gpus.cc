#include "driver/shared_gpus.h"

#include <optional>

#include "mps/isolation.h"

namespace canhazgpu::driver {
namespace {

const GpuInfo* GpuOfIndex(const std::vector<GpuInfo>& gpus, int index) {
  for (const GpuInfo& g : gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

}  // namespace

mps::MemoryIsolation PodShareIsolation(mps::MemoryIsolation detected) {
  return detected == mps::MemoryIsolation::kMpsDmem ? mps::MemoryIsolation::kMps : detected;
}

std::string PodShareIsolationName(const std::string& name) {
  std::optional<mps::MemoryIsolation> parsed = mps::ParseMemoryIsolation(name);
  if (!parsed) return "none";  // never more than we know it gets
  return std::string(mps::MemoryIsolationName(PodShareIsolation(*parsed)));
}

dra::PoolOptions PoolOptionsFor(const SharingOptions& sharing) {
  return dra::PoolOptions{
      .sharing = sharing.enabled, .reserved_bytes = sharing.reserved_bytes, .isolation = "none"};
}

uint64_t LocalShareBytes(const std::vector<alloc::GpuStatus>& statuses, int gpu) {
  uint64_t bytes = 0;
  for (const alloc::GpuStatus& s : statuses) {
    if (s.gpu != gpu) continue;
    for (const Reservation& r : s.shares) {
      // A pod's share is the scheduler's to count: it allocated it.
      if (r.kind != ReservationKind::kK8s) bytes += r.memory;
    }
  }
  return bytes;
}

void ApplySharing(NodeDevices& devices, const std::vector<GpuInfo>& gpus,
                  const std::vector<alloc::GpuStatus>& statuses, const SharingOptions& sharing,
                  const std::map<int, std::vector<QueueKeep>>& kept) {
  if (!sharing.enabled) return;
  const int64_t mib = static_cast<int64_t>(kMiB);
  for (dra::Device& d : devices.pool.devices) {
    if (!d.allow_multiple_allocations) continue;
    const GpuInfo* gpu = GpuOfIndex(gpus, d.gpu_index);
    mps::IsolationProbe probe{.driver_root = sharing.driver_root,
                              .cgroup_root = sharing.cgroup_root,
                              .cuda_driver_version = gpu ? gpu->cuda_driver_version : ""};
    const mps::MemoryIsolation detected =
        mps::DetectIsolation(probe, gpu ? gpu->pci_bus_id : std::string());
    const mps::MemoryIsolation isolation = PodShareIsolation(detected);
    devices.shared[d.name] = {.total = gpu ? gpu->memory_total_bytes : 0,
                              .shareable = static_cast<uint64_t>(d.capacity["memory"]),
                              .dmem_not_applied = isolation != detected};
    d.attributes[dra::kMemoryIsolationAttribute] =
        dra::AttributeValue::String(std::string(mps::MemoryIsolationName(isolation)));
    const int64_t local = static_cast<int64_t>(LocalShareBytes(statuses, d.gpu_index) +
                                               KeptMemory(kept, d.gpu_index));
    if (local == 0) continue;
    const int64_t left = (d.capacity["memory"] - local) / mib * mib;
    if (left < mib) {
      devices.withheld.insert(d.name);
      continue;
    }
    d.capacity["memory"] = left;
    dra::CapacityRequestPolicy& policy = d.request_policies["memory"];
    policy.default_value = left;
    policy.range_max = left;
  }
}

}  // namespace canhazgpu::driver
