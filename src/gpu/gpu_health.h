// GPU health: what a HealthMonitor reports about each GPU of the host, and
// the interface the node driver reads it through. A GPU is healthy when it
// has no problems; a problem is an XID error, a lost GPU, ECC page retirement
// pending, or a GPU whose health cannot be watched. The driver turns problems
// into device taints and into the kubelet's health stream
// (driver/device_health.h). Plain values; the interface's implementations
// are thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace canhazgpu::gpu {

enum class HealthProblemKind { kXid, kGpuLost, kEccRetirementPending, kUnmonitored };

// Fatal problems make a GPU unfit for new work; informational ones are
// reported and change nothing.
enum class HealthSeverity { kFatal, kInformational };

// "xid", "gpu-lost", "ecc-retirement-pending", "unmonitored".
std::string_view HealthProblemKindName(HealthProblemKind kind);

struct HealthProblem {
  HealthProblemKind kind = HealthProblemKind::kXid;
  HealthSeverity severity = HealthSeverity::kFatal;
  uint64_t xid = 0;   // kXid: the latest XID of this severity
  int xid_count = 0;  // kXid: XIDs of this severity since `since`
  // One line naming the GPU: "gpu 1 (GPU-2222): XID 79 (fatal) at 2026-09-21T10:00:00Z".
  std::string message;
  TimePoint since;      // when the problem began; kept while it lasts
  TimePoint last_seen;  // kXid: the latest event, from which the quiet period counts

  bool operator==(const HealthProblem&) const = default;
};

struct GpuHealth {
  int index = 0;   // NVML index, as GpuInfo::index and dra::Device::gpu_index
  int minor = -1;  // /dev/nvidiaN; -1 when unknown
  std::string uuid;
  // At most one problem per kind, except kXid: one fatal and one
  // informational. Empty: healthy.
  std::vector<HealthProblem> problems;

  bool HasFatalProblem() const;
  const HealthProblem* Find(HealthProblemKind kind, HealthSeverity severity) const;
  bool operator==(const GpuHealth&) const = default;
};

struct HealthSnapshot {
  uint64_t version = 0;         // grows with every change
  std::vector<GpuHealth> gpus;  // in index order
};

// NVIDIA's default list of XIDs that are an application's fault, not the
// GPU's (graphics engine exception, MMU fault, reset channel verification,
// preemptive cleanup, video processor exception, ctxsw timeout): reported,
// never a reason to stop scheduling on the GPU.
inline const std::set<uint64_t>& DefaultInformationalXids() {
  static const std::set<uint64_t> kXids = {13, 31, 43, 45, 68, 109};
  return kXids;
}

struct HealthOptions {
  // XIDs that are informational; every other XID is fatal.
  std::set<uint64_t> informational_xids = DefaultInformationalXids();
  // An XID problem clears after this long without another XID of its
  // severity. XIDs have no "resolved" event and NVIDIA's driver never clears
  // its taint, so one transient XID would take a GPU away until someone
  // restarts the plugin; a quiet period lets a GPU that recovered (the
  // driver reset it, the faulting job ended) come back on its own, while a
  // GPU that keeps failing keeps its taint.
  Duration xid_quiet_period = std::chrono::minutes(10);
  // How long one round of the NVML monitor waits for events, which bounds
  // how long Stop() takes and how often lost GPUs and pending page
  // retirements are polled.
  Duration event_wait = std::chrono::seconds(1);
};

class HealthMonitor {
 public:
  virtual ~HealthMonitor() = default;
  virtual HealthSnapshot Snapshot() const = 0;
  // Blocks until the version differs from `seen`, the monitor stops or
  // `timeout` passes; returns the version then. The daemon's loops (slice
  // republishing, the kubelet's health stream) wait here.
  virtual uint64_t WaitForChange(uint64_t seen, Duration timeout) = 0;
};

}  // namespace canhazgpu::gpu
