// Sharing a GPU by memory (ADR 0018): which GPUs a `--gpu-mem` request gets.
// Pure functions over one status snapshot; the caller records the choice in
// the same store transaction, whose insert checks the sum again.
//
// The rule: a request for N shares of M bytes gets N distinct GPUs, each with
// at least M bytes left to share. GPUs already shared come first, the one
// with the least room that fits first (best fit), so whole GPUs stay free for
// whole-GPU requests; then free GPUs, in the order whole-GPU requests take
// them (choose_gpus.h). A GPU in MIG mode, in error, held whole, in use
// without reservation, or with no memory to share (its total less the
// 512 MiB margin) is never shared. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/choose_gpus.h"
#include "alloc/gpu_status.h"

namespace canhazgpu::alloc {

// What one GPU offers a share.
struct ShareRoom {
  int gpu = 0;
  bool shareable = false;   // may hold a share at all (else `reason` says why)
  bool whole_free = false;  // free: a share would be its first
  uint64_t limit = 0;       // its shareable memory
  uint64_t used = 0;        // held by its shares
  std::string reason;       // why not: "reserved by alice", "in MIG mode"
  // Memory that waiters ahead keep here (counted in `used`), for messages:
  // "10Gi kept for carol, who queued first".
  std::vector<std::string> kept_for;
  // The queue entries (ids) that keep this GPU whole or memory on it, in
  // queue order: for whoever must name them apart (the node's NodeGpuStatus).
  std::vector<int64_t> kept_by;
  uint64_t Left() const { return used >= limit ? 0 : limit - used; }
};

// Every GPU's room, `status[i]` describing GPU i.
std::vector<ShareRoom> RoomsOf(const std::vector<GpuStatus>& status);

struct ShareWant {
  int count = 1;                             // distinct GPUs, one share each
  uint64_t memory = 0;                       // bytes per share, a whole number of MiB
  std::vector<int> ids;                      // explicit GPUs, all or nothing
  std::optional<std::vector<int>> eligible;  // as AllocationRequest
};

// The GPUs, in preference order. InvalidArgument: no GPU of this pool could
// ever hold such a share (more than any GPU's shareable memory, or fewer
// shareable GPUs than `count`); ResourceExhausted: not now, saying what is
// left. `candidates` (as ChooseGpus takes them) order the free GPUs.
absl::StatusOr<std::vector<int>> ChooseShareGpus(const std::vector<ShareRoom>& rooms,
                                                 const std::vector<GpuCandidate>& candidates,
                                                 const ShareWant& want);

// "6Gi of 79.5Gi left (alice 50Gi, bob 24Gi)": a shared GPU, for status and
// messages.
std::string DescribeShares(const GpuStatus& s);

// A fresh share id (a random UUID, version 4).
std::string NewShareId();

}  // namespace canhazgpu::alloc
