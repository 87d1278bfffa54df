#include "driver/health_board.h"

#include <utility>

namespace canhazgpu::driver {

void HealthBoard::Set(std::vector<DeviceHealth> devices) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_.devices = std::move(devices);
    ++snapshot_.version;
  }
  changed_.notify_all();
}

HealthSnapshot HealthBoard::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

HealthSnapshot HealthBoard::WaitForChange(uint64_t seen_version,
                                          std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return snapshot_.version != seen_version; });
  return snapshot_;
}

}  // namespace canhazgpu::driver
