// Helpers shared by reservations.cc and queue.cc, which together make the
// reservation lifecycle. Not for other modules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/choose_gpus.h"
#include "alloc/gpu_status.h"
#include "alloc/reservations.h"

namespace canhazgpu::alloc::internal {

// Whether `r` should end now (expired, or its job is gone), and why.
bool IsStale(const Reservation& r, const Machine& machine, ReleaseReason* reason);

// Whether ReapStale() would change anything: a stale reservation, a dead
// waiter, or a hold whose queue entry is gone. Reads only.
absl::StatusOr<bool> AnythingToReap(store::StateTransaction& txn, const Machine& machine);

// Deletes `r` and records it in the history as ended at `now` - one time
// for everything a transaction ends, so GPUs released together stay equal
// in the "released most recently" order.
absl::Status End(store::StateTransaction& txn, const Reservation& r, ReleaseReason reason,
                 TimePoint now);

// For a GPU in use without reservation: the users of its processes other
// than `caller` ("unknown" for processes not visible here, or when none is
// listed), comma-separated; empty when all are the caller's or the GPU is not
// in unreserved use. What a forced reservation records as overridden.
std::string ForcedOver(const GpuStatus& s, const Caller& caller);

// The pool, or FailedPrecondition telling the user to run `admin`.
absl::StatusOr<PoolConfig> PoolIn(store::StateTransaction& txn);

// `reservations`: those to show instead of the stored ones (LiveState).
absl::StatusOr<std::vector<GpuStatus>> StatusInTxn(
    store::StateTransaction& txn, const PoolConfig& pool, const std::vector<GpuUsage>& gpus,
    uint64_t threshold, const std::vector<Reservation>* reservations = nullptr);

// What ReapStale() would leave, computed without writing: what a view shows
// when the state file cannot be written (read-only, disk full).
struct LiveState {
  std::vector<Reservation> reservations;
  std::vector<QueueEntry> queue;
};
absl::StatusOr<LiveState> LiveStateOf(store::StateTransaction& txn, const Machine& machine);

// The allocator's view of every GPU for `caller`; GPUs held by the queue
// entry `queue_id` read as reserved ("already held").
absl::StatusOr<std::vector<GpuCandidate>> Candidates(store::StateTransaction& txn,
                                                     const std::vector<GpuStatus>& status,
                                                     const Caller& caller, TimePoint now,
                                                     std::optional<int64_t> queue_id);

}  // namespace canhazgpu::alloc::internal
