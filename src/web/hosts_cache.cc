#include "web/hosts_cache.h"

#include "core/clock.h"

namespace canhazgpu::web {

HostsCache::HostsCache(Collect collect, std::chrono::steady_clock::duration max_age)
    : collect_(std::move(collect)), max_age_(max_age), thread_([this] { Loop(); }) {}

HostsCache::~HostsCache() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

nlohmann::ordered_json HostsCache::Get() {
  MutexLock lock(mu_);
  if (!latest_ || RealClock().MonoNow() - at_ >= max_age_) {
    wanted_ = true;
    cv_.notify_all();
  }
  cv_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return latest_.has_value() || stopping_;
  });
  return latest_.value_or(nlohmann::ordered_json::array());
}

void HostsCache::Loop() {
  MutexLock lock(mu_);
  while (true) {
    cv_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wanted_ || stopping_; });
    if (stopping_) return;
    wanted_ = false;
    lock.Unlock();
    nlohmann::ordered_json fresh = collect_();
    lock.Lock();
    latest_ = std::move(fresh);
    at_ = RealClock().MonoNow();
    wanted_ = false;  // who asked meanwhile is answered by this one
    cv_.notify_all();
  }
}

}  // namespace canhazgpu::web
