// FakeNodeService: a NodeService for tests of the gRPC layer. It prepares
// every claim with one device named after the claim unless told otherwise,
// records the claims it was handed and the bounds of its last prepare, and
// can be held inside PrepareClaims until released, to test deadlines and
// concurrency. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "driver/node_service.h"

namespace canhazgpu::kubeletplugin::testing {

class FakeNodeService final : public driver::NodeService {
 public:
  // The device a claim gets when no result was set: pool "node-a", device
  // "gpu-<name>", CDI ID "canhazgpu.dev/gpu=<name>".
  static driver::PreparedDevice DefaultDevice(const driver::ClaimRef& claim);

  void SetPrepareResult(const std::string& uid, driver::PrepareResult result);
  void SetUnprepareError(const std::string& uid, std::string error);
  // The next PrepareClaims answers nothing for `uid`, as a buggy driver might.
  void ForgetInAnswer(const std::string& uid);

  // While held, PrepareClaims waits inside until Release().
  void Hold();
  void Release();

  // Waits (at most `timeout`) until `count` PrepareClaims calls have
  // started, or finished; false on timeout.
  bool WaitForPreparesStarted(size_t count, std::chrono::seconds timeout);
  bool WaitForPreparesFinished(size_t count, std::chrono::seconds timeout);

  // Every claim handed to PrepareClaims / UnprepareClaims, in order.
  std::vector<driver::ClaimRef> prepared_claims() const;
  std::vector<driver::ClaimRef> unprepared_claims() const;
  // The last PrepareClaims' deadline.
  std::chrono::steady_clock::time_point last_deadline() const;
  // Waits (at most `timeout`) until the PrepareClaims held now, or the
  // last one, sees its call cancelled; false on timeout.
  bool WaitForCancelled(std::chrono::seconds timeout);

  std::map<std::string, driver::PrepareResult> PrepareClaims(
      const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& bounds) override;
  std::map<std::string, std::string> UnprepareClaims(const std::vector<driver::ClaimRef>& claims,
                                                     const driver::CallBounds& bounds) override;

 private:
  mutable Mutex mu_;
  std::condition_variable_any changed_;
  std::map<std::string, driver::PrepareResult> results_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> unprepare_errors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> forgotten_ ABSL_GUARDED_BY(mu_);
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  size_t prepares_started_ ABSL_GUARDED_BY(mu_) = 0;
  size_t prepares_finished_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<driver::ClaimRef> prepared_ ABSL_GUARDED_BY(mu_);
  std::vector<driver::ClaimRef> unprepared_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_deadline_ ABSL_GUARDED_BY(mu_){};
  bool last_cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace canhazgpu::kubeletplugin::testing
