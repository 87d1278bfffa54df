#include "driver/withheld.h"

namespace canhazgpu::driver {

std::set<std::string> WithheldDevices(const dra::DevicePool& pool,
                                      const std::vector<alloc::GpuStatus>& statuses, bool sharing) {
  std::set<int> gpus;
  std::set<int> only_shares;
  for (const alloc::GpuStatus& s : statuses) {
    const bool for_kubernetes = s.state == alloc::GpuState::kInUse && s.reservation &&
                                s.reservation->kind == ReservationKind::kK8s;
    const bool shared = s.state == alloc::GpuState::kInUse && !s.shares.empty();
    if (sharing && shared) {
      only_shares.insert(s.gpu);
    } else if (s.state != alloc::GpuState::kAvailable && !for_kubernetes) {
      gpus.insert(s.gpu);
    }
  }
  std::set<std::string> devices;
  for (const dra::Device& d : pool.devices) {
    if (gpus.count(d.gpu_index) > 0) devices.insert(d.name);
    // Shares need a device that may be allocated as shares.
    if (only_shares.count(d.gpu_index) > 0 && !d.allow_multiple_allocations) {
      devices.insert(d.name);
    }
  }
  return devices;
}

}  // namespace canhazgpu::driver
