// HealthBoard: a HealthSource that is told the health of devices (by the
// node daemon's slice loop, from gpu::NvmlHealthMonitor's snapshots) and
// wakes the kubelet's health streams waiting on it. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <vector>

#include "core/mutex.h"
#include "driver/health_source.h"

namespace canhazgpu::driver {

class HealthBoard final : public HealthSource {
 public:
  // Replaces the whole list and starts a new version.
  void Set(std::vector<DeviceHealth> devices);

  HealthSnapshot Current() override;
  HealthSnapshot WaitForChange(uint64_t seen_version, std::chrono::milliseconds timeout) override;

 private:
  Mutex mu_;
  std::condition_variable_any changed_;
  HealthSnapshot snapshot_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::driver
