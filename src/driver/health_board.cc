#include "driver/health_board.h"

#include <utility>

namespace canhazgpu::driver {

void HealthBoard::Set(std::vector<DeviceHealth> devices) {
  {
    MutexLock lock(mu_);
    snapshot_.devices = std::move(devices);
    ++snapshot_.version;
  }
  changed_.notify_all();
}

HealthSnapshot HealthBoard::Current() {
  MutexLock lock(mu_);
  return snapshot_;
}

HealthSnapshot HealthBoard::WaitForChange(uint64_t seen_version,
                                          std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return snapshot_.version != seen_version;
  });
  return snapshot_;
}

}  // namespace canhazgpu::driver
