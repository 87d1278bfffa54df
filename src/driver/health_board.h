// HealthBoard: a HealthSource that is told the health of devices (by the
// node daemon's slice loop, from gpu::NvmlHealthMonitor's snapshots) and
// wakes the kubelet's health streams waiting on it. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "driver/health_source.h"

namespace canhazgpu::driver {

class HealthBoard final : public HealthSource {
 public:
  // Replaces the whole list and starts a new version.
  void Set(std::vector<DeviceHealth> devices);

  HealthSnapshot Current() override;
  HealthSnapshot WaitForChange(uint64_t seen_version, std::chrono::milliseconds timeout) override;

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  HealthSnapshot snapshot_;  // guarded by mu_
};

}  // namespace canhazgpu::driver
