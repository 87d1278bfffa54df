// Chooses GPUs for a request: a snapshot in, a decision out. No I/O, so the
// choice is fully testable and the caller makes it inside the same store
// transaction that records it. Thread-safe (pure functions).
//
// Order for count requests: GPUs this user released most recently first
// (their caches, compiled kernels and habits are there), then the GPU that
// has been free longest (never-used first), then the lowest id. GPUs in use
// without a reservation are taken only with --force, and after free ones.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"

namespace canhazgpu::alloc {

struct GpuCandidate {
  enum class State { kFree, kReserved, kInUse, kError };
  State state = State::kFree;
  // Why the GPU cannot be had, for messages: "reserved by alice (manual,
  // expires in 1h 2m)", "in use without reservation by bob (4096 MiB)".
  std::string reason;
  std::optional<TimePoint> last_released;
  std::optional<TimePoint> last_used_by_requester;
};

struct AllocationRequest {
  int count = 0;         // used when `ids` is empty
  std::vector<int> ids;  // explicit GPUs, all or nothing
  bool force = false;    // take GPUs in use without a reservation
  // The GPUs that match what the request asks them to be (--where and
  // friends), ascending; nullopt: any GPU.
  std::optional<std::vector<int>> eligible;
};

// Returns the chosen GPU ids in preference order. Errors:
//  - InvalidArgument: the request can never be met on this pool (count over
//    the pool size or the eligible GPUs, an id out of range or not eligible);
//  - ResourceExhausted: not available now, with what blocks it.
// `gpus[i]` describes GPU i.
absl::StatusOr<std::vector<int>> ChooseGpus(const std::vector<GpuCandidate>& gpus,
                                            const AllocationRequest& request);

}  // namespace canhazgpu::alloc
