#include "kubeletplugin/testing/fake_node_service.h"

#include <algorithm>
#include <utility>

namespace canhazgpu::kubeletplugin::testing {

driver::PreparedDevice FakeNodeService::DefaultDevice(const driver::ClaimRef& claim) {
  return {.pool = "node-a",
          .device = "gpu-" + claim.name,
          .cdi_device_ids = {"canhazgpu.dev/gpu=" + claim.name}};
}

void FakeNodeService::SetPrepareResult(const std::string& uid, driver::PrepareResult result) {
  MutexLock lock(mu_);
  results_[uid] = std::move(result);
}

void FakeNodeService::SetUnprepareError(const std::string& uid, std::string error) {
  MutexLock lock(mu_);
  unprepare_errors_[uid] = std::move(error);
}

void FakeNodeService::ForgetInAnswer(const std::string& uid) {
  MutexLock lock(mu_);
  forgotten_.push_back(uid);
}

void FakeNodeService::Hold() {
  MutexLock lock(mu_);
  held_ = true;
}

void FakeNodeService::Release() {
  {
    MutexLock lock(mu_);
    held_ = false;
  }
  changed_.notify_all();
}

bool FakeNodeService::WaitForPreparesStarted(size_t count, std::chrono::seconds timeout) {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return prepares_started_ >= count;
  });
}

bool FakeNodeService::WaitForPreparesFinished(size_t count, std::chrono::seconds timeout) {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return prepares_finished_ >= count;
  });
}

std::vector<driver::ClaimRef> FakeNodeService::prepared_claims() const {
  MutexLock lock(mu_);
  return prepared_;
}

std::vector<driver::ClaimRef> FakeNodeService::unprepared_claims() const {
  MutexLock lock(mu_);
  return unprepared_;
}

std::chrono::steady_clock::time_point FakeNodeService::last_deadline() const {
  MutexLock lock(mu_);
  return last_deadline_;
}

bool FakeNodeService::WaitForCancelled(std::chrono::seconds timeout) {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout,
                           [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return last_cancelled_; });
}

std::map<std::string, driver::PrepareResult> FakeNodeService::PrepareClaims(
    const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& bounds) {
  MutexLock lock(mu_);
  ++prepares_started_;
  prepared_.insert(prepared_.end(), claims.begin(), claims.end());
  last_deadline_ = bounds.deadline;
  last_cancelled_ = false;
  changed_.notify_all();
  // Cancellation has no notification to wait for: looked at while held.
  while (held_) {
    changed_.wait_for(lock, std::chrono::milliseconds(20));
    if (!last_cancelled_ && bounds.cancelled && bounds.cancelled()) {
      last_cancelled_ = true;
      changed_.notify_all();
    }
  }
  std::map<std::string, driver::PrepareResult> results;
  for (const driver::ClaimRef& claim : claims) {
    if (std::find(forgotten_.begin(), forgotten_.end(), claim.uid) != forgotten_.end()) {
      continue;
    }
    auto set = results_.find(claim.uid);
    results[claim.uid] = set != results_.end()
                             ? set->second
                             : driver::PrepareResult{.devices = {DefaultDevice(claim)}};
  }
  forgotten_.clear();
  ++prepares_finished_;
  changed_.notify_all();
  return results;
}

std::map<std::string, std::string> FakeNodeService::UnprepareClaims(
    const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& /*bounds*/) {
  MutexLock lock(mu_);
  unprepared_.insert(unprepared_.end(), claims.begin(), claims.end());
  std::map<std::string, std::string> errors;
  for (const driver::ClaimRef& claim : claims) {
    auto set = unprepare_errors_.find(claim.uid);
    errors[claim.uid] = set != unprepare_errors_.end() ? set->second : "";
  }
  return errors;
}

}  // namespace canhazgpu::kubeletplugin::testing
