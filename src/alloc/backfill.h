// Backfill: which free GPUs the requests waiting ahead of a request would
// take now, so that it takes only the others, and what room on each GPU a
// share may have behind them (the rules are in queue.h). Pure functions over
// one snapshot: the queue and the status of every GPU, read in the
// transaction that acts on the answer. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "alloc/gpu_status.h"
#include "alloc/shares.h"
#include "core/reservation.h"

namespace canhazgpu::alloc {

// GPU -> the queue entry (in `queue`) that would take it. `before`: only
// entries that arrived before this one (its own id); nullopt: every entry,
// as a newcomer sees them.
//
// Each earlier entry in arrival order takes, among the GPUs no entry before
// it took, those it can use: a GPU it considers (one of its ids, else one its
// selector matched, else any) that it does not hold yet and that is free
// (available, or with --force in use without reservation by processes its
// user may override), up to the number it still lacks. A count entry with
// more such GPUs than it lacks prefers those no later entry asks for by id or
// selector, then the longest free, then the lowest ids; which ones does not
// matter for fairness (it gets as many either way), but this way it leaves
// what the entries behind it can use.
std::map<int, const QueueEntry*> ClaimedAhead(const std::vector<QueueEntry>& queue,
                                              const std::vector<GpuStatus>& status,
                                              std::optional<int64_t> before);

// Each GPU's room for a share behind the waiters ahead of entry `before`
// (nullopt: every waiter, as a newcomer sees them): what a share may have
// without delaying anyone who came first. Going down the queue in arrival
// order:
//  - a whole-GPU waiter keeps the free GPUs it would take now
//    (ClaimedAhead), and for what it still lacks after them, that many of
//    the shared GPUs it considers (those with the least memory in use
//    first: they drain first): no new share lands on a GPU it waits to have
//    whole, so a stream of small shares cannot starve it;
//  - a share waiter keeps its memory on the GPUs it would get now, or, when
//    it does not fit now, on the GPUs it waits for (its ids; else the
//    shareable GPUs it considers with the most room first, as many as it
//    asks for): a later share fits only in what is left beside it, so a
//    stream of small shares cannot starve a large one either.
// A room kept for a waiter says so (`reason` or `kept_for`), naming it.
std::vector<ShareRoom> ShareRoomsBehind(const std::vector<QueueEntry>& queue,
                                        const std::vector<GpuStatus>& status,
                                        std::optional<int64_t> before);

// Whether queue entry `e` considers GPU `gpu` at all (its ids, its eligible
// GPUs, or any).
bool Considers(const QueueEntry& e, int gpu);

// Whether an entry that arrived after entry `after` asks for GPU `gpu` by id
// or selector (not merely as one of any).
bool WantedSpecificallyAfter(const std::vector<QueueEntry>& queue, int64_t after, int gpu);

}  // namespace canhazgpu::alloc
