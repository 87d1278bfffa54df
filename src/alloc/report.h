// Who used how many GPU-hours over a period, and how much of that time the
// GPUs were actually busy. Reserved time comes from the history and the live
// reservations, clipped to the period. Busy/idle comes from usage samples
// recorded whenever canhazgpu looks at the GPUs (RecordUsage); a sample
// speaks for at most kSampleSpan after it, and reserved time no sample speaks
// for is reported as unknown, never as idle. A share of a GPU's memory (ADR
// 0018) counts as its part of the GPU: its memory over the GPU's shareable
// memory as recorded with the share (10Gi of 80Gi for an hour is 0.125
// GPU-hours, its busy/idle/unknown split alike); a share recorded without
// the GPU's figure (ended before schema 11) counts as a whole GPU.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/gpu_status.h"
#include "alloc/reservations.h"
#include "core/gpu.h"
#include "core/reservation.h"
#include "store/state_store.h"

namespace canhazgpu::alloc {

inline constexpr Duration kSampleSpan = std::chrono::minutes(5);
// At most one sample per GPU this often, however often we look.
inline constexpr Duration kSampleEvery = std::chrono::minutes(1);
inline constexpr Duration kSampleRetention = std::chrono::hours(24 * 180);

// Records what `gpus` show now, unless a sample was taken in the last
// kSampleEvery. Called inside the write transactions that look at the GPUs
// anyway (CollectStatus, the queue's polls), so sampling costs no
// transaction of its own; a transaction that fails takes its sample along.
absl::Status RecordUsage(store::StateTransaction& txn, const std::vector<GpuUsage>& gpus,
                         uint64_t threshold_bytes, TimePoint now);

// Time in milliseconds, split the three ways a sample can tell.
struct BusySplit {
  int64_t busy_ms = 0;
  int64_t idle_ms = 0;
  int64_t unknown_ms = 0;
};

struct UserUsage {
  std::string user;
  int64_t run_ms = 0;
  int64_t manual_ms = 0;
  int64_t k8s_ms = 0;  // GPUs prepared for Kubernetes claims
  // Of run_ms + manual_ms + k8s_ms, what shares of GPUs count (each its
  // part of the GPU).
  int64_t shared_ms = 0;
  BusySplit split;
  int reservations = 0;  // a 4-GPU reservation counts once
  int run_count = 0;     // of `reservations`, those of kind run
  int manual_count = 0;  // and of kind manual (the rest are k8s)
  int64_t longest_ms = 0;
  int64_t total_ms() const { return run_ms + manual_ms + k8s_ms; }
};

struct UsageReport {
  TimePoint from;
  TimePoint to;
  int gpu_count = 0;
  std::vector<UserUsage> users;  // most GPU-hours first
  UserUsage total;
  int64_t available_ms = 0;  // gpu_count x the period
};

struct ReportInput {
  TimePoint from;
  TimePoint to;
  int gpu_count = 0;
  std::vector<HistoryRecord> history;
  std::vector<Reservation> active;
  std::vector<UsageSample> samples;  // ordered by GPU, then time
};

UsageReport BuildReport(const ReportInput& input);

// The report for the `days` before `now`, from the store.
// The longest period a report covers: ten years, as the dashboard allows.
inline constexpr int kMaxReportDays = 3650;

absl::StatusOr<UsageReport> CollectReport(store::StateStore& store, int days, TimePoint now);

}  // namespace canhazgpu::alloc
