// What the host's canhazgpu queue keeps from the cluster. A node's GPUs are
// also its local users' (ADR 0018: one store, one truth), and the host's
// queue is fair in both whole GPUs and memory (alloc/queue.h): a later
// request may have only what no earlier waiter needs. A pod is such a later
// request, so the node publishes only that: a GPU a local waiter would take
// now, or waits to have whole, is withheld from the slice; memory a waiting
// local share keeps on a shared GPU comes off its published capacity.
// Without this, pods' shares landing one after another could starve a
// local user waiting for a GPU to drain. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "alloc/gpu_status.h"
#include "core/clock.h"
#include "core/reservation.h"

namespace canhazgpu::driver {

// One waiter's keep on one GPU.
struct QueueKeep {
  std::string user;     // the waiter
  uint64_t memory = 0;  // bytes kept for its share; 0: the whole GPU
  TimePoint since;      // when it queued
};

// GPU index -> what the waiters in `queue` (live ones, in queue order) keep
// of it, as a newcomer sees them. `sharing`: the node publishes GPUs for
// shares (then shares' room is kept as memory, and a GPU a waiter wants
// whole while shares drain is kept whole); otherwise every GPU a waiter
// would take now is kept whole.
std::map<int, std::vector<QueueKeep>> KeptForHostQueue(
    const std::vector<QueueEntry>& queue, const std::vector<alloc::GpuStatus>& statuses,
    bool sharing);

// The memory kept on `gpu` for waiting shares (0 when it is kept whole or
// not at all).
uint64_t KeptMemory(const std::map<int, std::vector<QueueKeep>>& kept, int gpu);

// Whether `gpu` is kept whole.
bool KeptWhole(const std::map<int, std::vector<QueueKeep>>& kept, int gpu);

}  // namespace canhazgpu::driver
