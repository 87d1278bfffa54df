// HealthMonitor over NVML: registers every GPU for XID and ECC events on one
// event set, waits for events a bounded time per round, and after each round
// polls each GPU for being lost (a query answering NVML_ERROR_GPU_IS_LOST)
// and for ECC page retirement pending. What it sees goes into a
// HealthTracker, which decides when problems begin and clear. A GPU that
// cannot be registered (NVML_ERROR_NOT_SUPPORTED, say) is "unmonitored".
// Start() runs the rounds on a thread of the monitor's own; Stop() ends it
// within about one HealthOptions::event_wait. Snapshot() and WaitForChange()
// are thread-safe; RunOnce() is for a caller that did not Start().
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "gpu/gpu_health.h"
#include "gpu/health_tracker.h"
#include "gpu/nvml_abi.h"
#include "gpu/nvml_library.h"

namespace canhazgpu::gpu {

class NvmlHealthMonitor : public HealthMonitor {
 public:
  // Loads NVML from `library` (as NvmlGpuProvider does), creates the event
  // set and registers the GPUs. FailedPrecondition when the library is
  // missing or lacks the event functions.
  static absl::StatusOr<std::unique_ptr<NvmlHealthMonitor>> Create(const std::string& library,
                                                                   const Clock& clock,
                                                                   HealthOptions options = {});
  ~NvmlHealthMonitor() override;  // stops

  void Start();
  // Ends the thread (if any) and wakes the waiters; idempotent.
  void Stop();
  // One round on the caller's thread: events for up to event_wait, then the
  // polls, then the quiet XIDs expire. Not while Start()ed.
  void RunOnce();

  HealthSnapshot Snapshot() const override { return tracker_.Snapshot(); }
  uint64_t WaitForChange(uint64_t seen, Duration timeout) override {
    return tracker_.WaitForChange(seen, timeout);
  }

  struct Api;

 private:
  struct Gpu {
    int index = 0;
    nvmlDevice_t handle = nullptr;
    // Registration is retried while a GPU is lost, not after NVML said no.
    bool needs_registration = true;
  };

  NvmlHealthMonitor(std::unique_ptr<NvmlLibrary> library, std::unique_ptr<Api> api,
                    nvmlEventSet_t set, const Clock& clock, HealthOptions options);
  void AddGpus();
  void Register(Gpu& gpu);
  void Poll(Gpu& gpu);
  void HandleEvent(const nvmlEventData_t& event);
  // Waits up to event_wait for Stop(); false once stopping.
  bool Backoff();

  std::unique_ptr<NvmlLibrary> library_;
  std::unique_ptr<Api> api_;
  nvmlEventSet_t set_;
  const HealthOptions options_;
  HealthTracker tracker_;
  std::vector<Gpu> gpus_;  // touched by the round's thread only

  Mutex mu_;
  std::condition_variable_any stop_cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace canhazgpu::gpu
