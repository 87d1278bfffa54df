#include "simkubelet/device_health.h"

#include <chrono>
#include <utility>

namespace canhazgpu::simkubelet {
namespace {

// The kubelet's default when a plugin gives a device no timeout.
constexpr int64_t kDefaultHealthTimeoutSeconds = 30;
// Between a broken stream and the next attempt.
constexpr std::chrono::seconds kResumeAfter{1};

}  // namespace

void DeviceHealthCache::Replace(const std::string& driver,
                                const std::vector<driver::DeviceHealth>& devices) {
  MutexLock lock(mu_);
  for (auto it = devices_.lower_bound({driver, "", ""});
       it != devices_.end() && std::get<0>(it->first) == driver;) {
    it = devices_.erase(it);
  }
  for (const driver::DeviceHealth& d : devices) devices_[{driver, d.pool, d.device}] = d;
}

void DeviceHealthCache::Forget(const std::string& driver) { Replace(driver, {}); }

std::string DeviceHealthCache::Health(const std::string& driver, const std::string& pool,
                                      const std::string& device) const {
  MutexLock lock(mu_);
  auto it = devices_.find({driver, pool, device});
  if (it == devices_.end()) return "Unknown";
  const driver::DeviceHealth& d = it->second;
  const int64_t timeout = d.timeout_seconds > 0 ? d.timeout_seconds : kDefaultHealthTimeoutSeconds;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count();
  if (d.last_updated_unix > 0 && now - d.last_updated_unix > timeout) return "Unknown";
  switch (d.state) {
    case driver::DeviceHealth::State::kHealthy:
      return "Healthy";
    case driver::DeviceHealth::State::kUnhealthy:
      return "Unhealthy";
    case driver::DeviceHealth::State::kUnknown:
      break;
  }
  return "Unknown";
}

HealthStream::HealthStream(std::shared_ptr<kubeletplugin::KubeletClient> client,
                           DeviceHealthCache& cache,
                           std::function<void(const std::string&)> on_change)
    : client_(std::move(client)), cache_(cache), on_change_(std::move(on_change)) {
  thread_ = std::thread([this] { Run(); });
}

HealthStream::~HealthStream() {
  MutexLock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  // A cancel that comes before the stream registered itself is missed:
  // repeat it until the thread is out.
  while (!done_) {
    lock.Unlock();
    client_->CancelWatches();
    lock.Lock();
    cv_.wait_for(lock, std::chrono::milliseconds(50),
                 [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_; });
  }
  lock.Unlock();
  thread_.join();
}

void HealthStream::Run() {
  const std::string driver_name = client_->plugin().name;
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    client_
        ->WatchResources([&](const std::vector<driver::DeviceHealth>& devices) {
          cache_.Replace(driver_name, devices);
          on_change_(driver_name);
          MutexLock guard(mu_);
          return !stopping_;
        })
        .IgnoreError();  // the stream broke: the plugin restarts or is gone; resumed below
    lock.Lock();
    cv_.wait_for(lock, kResumeAfter,
                 [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
  }
  done_ = true;
  cv_.notify_all();
}

}  // namespace canhazgpu::simkubelet
