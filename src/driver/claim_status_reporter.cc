#include "driver/claim_status_reporter.h"

#include <algorithm>
#include <utility>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::driver {
namespace {
using SteadyTime = std::chrono::steady_clock::time_point;
}  // namespace

ClaimStatusReporter::ClaimStatusReporter(kube::Client& client, ClaimStatusOptions options,
                                         const Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {
  thread_ = std::thread([this] { Run(); });
}

ClaimStatusReporter::~ClaimStatusReporter() { Stop(); }

void ClaimStatusReporter::Set(std::map<std::string, DesiredClaimStatus> desired) {
  MutexLock lock(mu_);
  if (desired == desired_) return;
  desired_ = std::move(desired);
  // A claim that failed to be written and is gone before its retry: nothing
  // left to write of it.
  std::erase_if(retry_at_, [&](const auto& retry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !desired_.contains(retry.first) && !written_.contains(retry.first);
  });
  cv_.notify_all();
}

void ClaimStatusReporter::RetryNow() {
  MutexLock lock(mu_);
  if (retry_at_.empty()) return;
  retry_at_.clear();
  cv_.notify_all();
}

bool ClaimStatusReporter::Settled(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !writing_ && !PendingLocked();
  });
}

void ClaimStatusReporter::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t ClaimStatusReporter::failures() const {
  MutexLock lock(mu_);
  return failures_;
}

bool ClaimStatusReporter::NeedsWriteLocked(const std::string& uid,
                                           const DesiredClaimStatus& want) const {
  auto done = written_.find(uid);
  // A claim with no entries to carry, never written: nothing to say on it.
  return done == written_.end() ? !want.entries.empty() : done->second != want;
}

bool ClaimStatusReporter::PendingLocked() const {
  for (const auto& [uid, want] : desired_) {
    if (NeedsWriteLocked(uid, want) && !retry_at_.contains(uid)) return true;
  }
  for (const auto& [uid, done] : written_) {
    if (!desired_.contains(uid) && !retry_at_.contains(uid)) return true;
  }
  return false;
}

std::optional<ClaimStatusReporter::Work> ClaimStatusReporter::NextLocked(SteadyTime* wake) {
  const SteadyTime now = clock_.MonoNow();
  // Due unless its last write failed and its retry time has not come.
  auto due = [&](const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto retry = retry_at_.find(uid);
    if (retry == retry_at_.end() || retry->second <= now) return true;
    *wake = std::min(*wake, retry->second);
    return false;
  };
  for (const auto& [uid, want] : desired_) {
    if (NeedsWriteLocked(uid, want) && due(uid)) return Work{.uid = uid, .target = want};
  }
  // Claims no longer prepared: their entries go.
  for (const auto& [uid, done] : written_) {
    if (desired_.contains(uid)) continue;
    if (due(uid)) {
      return Work{.uid = uid, .target = {.namespace_name = done.namespace_name, .name = done.name}};
    }
  }
  return std::nullopt;
}

void ClaimStatusReporter::Run() {
  MutexLock lock(mu_);
  while (!stop_) {
    SteadyTime wake = SteadyTime::max();
    std::optional<Work> work = NextLocked(&wake);
    if (!work) {
      if (wake == SteadyTime::max()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, wake);
      }
      continue;
    }
    writing_ = true;
    lock.Unlock();
    const DesiredClaimStatus& t = work->target;
    absl::Status s = WriteClaimDeviceStatus(client_, t.namespace_name, t.name, work->uid, t.entries,
                                            options_.driver, options_.pool,
                                            FormatTimestampSeconds(clock_.Now()));
    if (!s.ok()) {
      options_.log.Warning(StrCat("cannot write the device status of claim ", t.namespace_name, "/",
                                  t.name, " (tried again in ", FormatDurationShort(options_.retry),
                                  "): ", s.message()));
    }
    lock.Lock();
    writing_ = false;
    if (s.ok()) {
      retry_at_.erase(work->uid);
      if (t.entries.empty()) {
        written_.erase(work->uid);
      } else {
        written_[work->uid] = t;
      }
    } else {
      ++failures_;
      retry_at_[work->uid] = clock_.MonoNow() + options_.retry;
    }
    cv_.notify_all();
  }
}

}  // namespace canhazgpu::driver
