#include "driver/withheld.h"

namespace canhazgpu::driver {

std::set<std::string> WithheldDevices(const dra::DevicePool& pool,
                                      const std::vector<alloc::GpuStatus>& statuses) {
  std::set<int> gpus;
  for (const alloc::GpuStatus& s : statuses) {
    const bool for_kubernetes = s.state == alloc::GpuState::kInUse && s.reservation &&
                                s.reservation->kind == ReservationKind::kK8s;
    if (s.state != alloc::GpuState::kAvailable && !for_kubernetes) gpus.insert(s.gpu);
  }
  std::set<std::string> devices;
  for (const dra::Device& d : pool.devices) {
    if (gpus.count(d.gpu_index) > 0) devices.insert(d.name);
  }
  return devices;
}

}  // namespace canhazgpu::driver
