// HealthTracker keeps the health of a host's GPUs as observations come in:
// XID events, lost or recovered GPUs, pending page retirements, GPUs that
// cannot be watched. It decides when problems begin and end (an XID problem
// ends after a quiet period, by the Clock) and counts versions so readers
// can wait for a change. NvmlHealthMonitor feeds one from NVML; tests and
// the daemon's tests can feed one directly, as a HealthMonitor that works.
// Thread-safe: observations and readers may come from any thread.
#pragma once

#include <condition_variable>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/mutex.h"
#include "gpu/gpu_health.h"

namespace canhazgpu::gpu {

class HealthTracker : public HealthMonitor {
 public:
  HealthTracker(const Clock& clock, HealthOptions options);

  // A GPU to track, healthy until told otherwise. Indices are added once.
  void AddGpu(int index, int minor, std::string uuid);

  // An XID on GPU `index`; `detail` (", GPU instance 3") goes into the message.
  void RecordXid(int index, uint64_t xid, std::string_view detail = "");
  // `reason` is NVML's message; it is kept from the first report.
  void SetLost(int index, bool lost, std::string_view reason = "");
  void SetEccRetirementPending(int index, bool pending);
  void SetUnmonitored(int index, bool unmonitored, std::string_view reason = "");
  // Ends the XID problems that have been quiet for the quiet period.
  void ExpireQuietXids();
  // Wakes every WaitForChange, now and later.
  void Stop();

  HealthSnapshot Snapshot() const override;
  uint64_t WaitForChange(uint64_t seen, Duration timeout) override;

 private:
  GpuHealth* Find(int index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds or removes the problem (kind, severity) of `gpu`; counts a change.
  void Set(GpuHealth& gpu, HealthProblemKind kind, HealthSeverity severity, bool present,
           std::string_view reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  const HealthOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;
  HealthSnapshot state_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace canhazgpu::gpu
