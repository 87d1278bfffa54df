// What `status` shows for each GPU, derived from the provider's report, the
// reservations and the process table: AVAILABLE, IN_USE (reserved),
// UNRESERVED (busy above the memory threshold with no reservation) or ERROR.
// Usage detection lives here: each GPU process's owner comes from the real
// uid in /proc (never $USER), its command line, and the model it serves.
// Pure functions over the seams; thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "alloc/model_detection.h"
#include "core/gpu.h"
#include "core/reservation.h"
#include "host/process_table.h"

namespace canhazgpu::alloc {

inline constexpr uint64_t kDefaultMemoryThresholdMiB = 1024;
// 16 TiB: above any GPU's memory, and far from wrapping when scaled to bytes.
inline constexpr uint64_t kMaxMemoryThresholdMiB = uint64_t{16} << 20;

enum class GpuState { kAvailable, kInUse, kUnreserved, kError };
std::string_view StateName(GpuState state);

struct ProcessUsage {
  int64_t pid = 0;
  uint32_t uid = 0;
  std::string user;     // "unknown" when the process is not visible here
  std::string command;  // the command line, space-joined
  uint64_t used_memory_bytes = 0;
  std::optional<ModelInfo> model;
};

struct GpuStatus {
  int gpu = 0;
  GpuState state = GpuState::kAvailable;
  // The whole-GPU reservation; for a shared GPU, its first share (so code
  // that asks only "is it held, and by whom" reads a shared GPU as held).
  std::optional<Reservation> reservation;
  // Every share of a shared GPU (ADR 0018), by share id; empty otherwise. A
  // shared GPU is kInUse: a whole-GPU request waits until its shares end.
  std::vector<Reservation> shares;
  // A shared GPU's use beyond its shares, as unreserved use is reported:
  // "bob uses 30Gi, 6Gi over a 24Gi share", "carol uses 2Gi without a
  // share". Processes of one user are summed against that user's shares of
  // the GPU; a user without a share counts only above the threshold.
  std::vector<std::string> share_overuse;
  std::optional<GpuInfo> info;  // nullopt when the provider did not report it
  std::vector<ProcessUsage> processes;
  std::optional<ModelInfo> model;  // first model found among the processes
  std::optional<TimePoint> last_released;
  std::string error;
};

// The GPU's processes with owners, commands and models. A model is looked
// for in the process's own command line, then in up to three parents (vLLM
// workers are children of the `vllm serve` process).
std::vector<ProcessUsage> DescribeProcesses(const GpuInfo& gpu,
                                            const host::ProcessTable& processes);

// A GPU as the provider reports it, with its processes described.
struct GpuUsage {
  GpuInfo info;
  std::vector<ProcessUsage> processes;
  std::optional<ModelInfo> model;  // first model found among the processes
};

// Describes every GPU's processes. It reads the process table, so callers do
// it before opening a store transaction, not while holding the write lock.
std::vector<GpuUsage> DescribeGpus(const std::vector<GpuInfo>& gpus,
                                   const host::ProcessTable& processes);

struct StatusInput {
  int gpu_count = 0;
  std::string provider;  // for messages: "not reported by the nvidia provider"
  std::vector<Reservation> reservations;
  std::vector<GpuUsage> gpus;
  std::map<int, TimePoint> last_released;
  uint64_t threshold_bytes = kDefaultMemoryThresholdMiB * kMiB;
};

std::vector<GpuStatus> BuildStatus(const StatusInput& input);

// Distinct process owners in first-seen order.
std::vector<std::string> ProcessUsers(const std::vector<ProcessUsage>& processes);

}  // namespace canhazgpu::alloc
