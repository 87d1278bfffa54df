#include "alloc/queue.h"

#include <algorithm>
#include <map>

#include "alloc/backfill.h"
#include "alloc/choose_gpus.h"
#include "alloc/report.h"
#include "alloc/reservations_internal.h"
#include "alloc/shares.h"
#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::alloc {
namespace {

using internal::Candidates;
using internal::End;
using internal::PoolIn;
using internal::StatusInTxn;

int Wanted(const ReserveRequest& r) {
  return r.ids.empty() ? r.count : static_cast<int>(r.ids.size());
}

// Requests no state of this pool can ever serve: refused, never queued.
absl::Status CheckPossible(const ReserveRequest& r, const PoolConfig& pool) {
  if (r.ids.empty() && r.count > pool.gpu_count) {
    return absl::InvalidArgumentError(
        StrCat("requested ", r.count, " GPUs but the pool has only ", pool.gpu_count));
  }
  if (r.ids.empty() && r.eligible && r.count > static_cast<int>(r.eligible->size())) {
    return absl::InvalidArgumentError(
        StrCat("requested ", r.count, " GPUs but only ", r.eligible->size(), " match"));
  }
  for (int id : r.ids) {
    if (id >= pool.gpu_count) {
      return absl::InvalidArgumentError(
          StrCat("gpu id ", id, " is out of range: the pool has GPUs 0-", pool.gpu_count - 1));
    }
  }
  return absl::OkStatus();
}

// The GPUs a request could use: its ids, else the eligible ones; empty: any.
std::vector<int> Considered(const ReserveRequest& r) {
  return r.ids.empty() ? r.eligible.value_or(std::vector<int>()) : r.ids;
}

bool IsEligible(const ReserveRequest& r, int gpu) {
  return !r.eligible || std::binary_search(r.eligible->begin(), r.eligible->end(), gpu);
}

Reservation NewReservation(int gpu, const Caller& caller, const ReserveRequest& request,
                           TimePoint now, std::string forced_over = "") {
  Reservation r{.gpu = gpu,
                .uid = caller.uid,
                .user = caller.user,
                .display_user = request.display_user,
                .kind = request.kind,
                .start = now,
                .process = request.process,
                .wrapper = request.wrapper,
                .job_cgroup = request.job_cgroup,
                .note = request.note,
                .command = request.command};
  r.forced_over = std::move(forced_over);
  if (request.duration) r.expires = now + *request.duration;
  return r;
}

// The GPUs request (entry `id`, or a newcomer) gets shares on now, with the
// allocator's errors (ResourceExhausted: not now).
absl::StatusOr<std::vector<int>> SharesToTake(store::StateTransaction& txn,
                                              const std::vector<GpuStatus>& status,
                                              const std::vector<QueueEntry>& queue,
                                              const Caller& caller, const ReserveRequest& request,
                                              std::optional<int64_t> id, TimePoint now) {
  ASSIGN_OR_RETURN(std::vector<GpuCandidate> candidates,
                   Candidates(txn, status, caller, now, std::nullopt));
  return ChooseShareGpus(ShareRoomsBehind(queue, status, id), candidates,
                         {.count = request.count,
                          .memory = request.memory,
                          .ids = request.ids,
                          .eligible = request.eligible});
}

// Records one share per GPU in `gpus`, each with a fresh id.
absl::Status InsertShares(store::StateTransaction& txn, const std::vector<int>& gpus,
                          const std::vector<GpuStatus>& status, const Caller& caller,
                          const ReserveRequest& request, TimePoint now) {
  const std::vector<ShareRoom> rooms = RoomsOf(status);
  for (int gpu : gpus) {
    Reservation r = NewReservation(gpu, caller, request, now);
    r.memory = request.memory;
    r.share = NewShareId();
    r.shareable = rooms[static_cast<size_t>(gpu)].limit;
    RETURN_IF_ERROR(txn.InsertReservation(r));
  }
  return absl::OkStatus();
}

// "alice (0,1)" per holder of a GPU the request could use (`ids`; empty:
// any), "bob (queued ahead)" for GPUs an earlier waiter holds or is about to
// take (`claimed`), and "in use without reservation (3)".
std::vector<std::string> Blockers(const std::vector<GpuStatus>& status, int64_t queue_id,
                                  const std::vector<int>& ids,
                                  const std::map<int, const QueueEntry*>& claimed) {
  std::map<std::string, std::vector<int>> by_holder;
  for (const GpuStatus& s : status) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), s.gpu) == ids.end()) continue;
    auto claim = claimed.find(s.gpu);
    if (!s.shares.empty()) {
      // A whole GPU waits for every share of it to end.
      std::vector<std::string> users;
      for (const Reservation& r : s.shares) users.push_back(r.user);
      by_holder[StrCat(Join(users, ", "), " (shares)")].push_back(s.gpu);
    } else if (s.state == GpuState::kInUse && s.reservation->queue_id != queue_id) {
      const Reservation& r = *s.reservation;
      by_holder[r.queue_id
                    ? StrCat(r.user, *r.queue_id < queue_id ? " (queued ahead)" : " (queued)")
                : r.claim ? StrCat("Kubernetes ", DescribeClaim(*r.claim))
                          : r.user]
          .push_back(s.gpu);
    } else if (claim != claimed.end()) {
      by_holder[StrCat(claim->second->user, " (queued ahead)")].push_back(s.gpu);
    } else if (s.state == GpuState::kUnreserved) {
      by_holder["in use without reservation"].push_back(s.gpu);
    } else if (s.state == GpuState::kError) {
      by_holder["in error"].push_back(s.gpu);
    }
  }
  std::vector<std::string> out;
  for (const auto& [holder, gpus] : by_holder) {
    out.push_back(StrCat(holder, " (", JoinGpuIds(gpus), ")"));
  }
  return out;
}

// The allocator's view for `caller` (entry `queue_id`, or a newcomer), with
// the GPUs that waiters ahead would take read as reserved: what is left is
// what this request may have without delaying anyone who came first.
absl::StatusOr<std::vector<GpuCandidate>> CandidatesBehind(
    store::StateTransaction& txn, const std::vector<GpuStatus>& status, const Caller& caller,
    TimePoint now, std::optional<int64_t> queue_id,
    const std::map<int, const QueueEntry*>& claimed) {
  ASSIGN_OR_RETURN(std::vector<GpuCandidate> candidates,
                   Candidates(txn, status, caller, now, queue_id));
  for (const auto& [gpu, entry] : claimed) {
    GpuCandidate& c = candidates[static_cast<size_t>(gpu)];
    c.state = GpuCandidate::State::kReserved;
    c.reason = StrCat("wanted by ", entry->user, ", who queued first (see 'canhazgpu queue')");
  }
  return candidates;
}

// The GPUs entry `id` takes now, besides the `held` ones: those it can use
// that no earlier waiter would take, up to what it lacks.
absl::StatusOr<std::vector<int>> ToTake(store::StateTransaction& txn,
                                        const std::vector<GpuStatus>& status,
                                        const std::vector<QueueEntry>& queue, const Caller& caller,
                                        const ReserveRequest& request, int64_t id,
                                        const std::vector<int>& held, TimePoint now) {
  const int lacking = Wanted(request) - static_cast<int>(held.size());
  if (lacking <= 0) return std::vector<int>();
  const std::map<int, const QueueEntry*> claimed = ClaimedAhead(queue, status, id);
  // Most polls find nothing free: they stop here, before the allocator's
  // view reads the history.
  const std::vector<int> considered = Considered(request);
  bool anything = false;
  for (const GpuStatus& s : status) {
    const bool free =
        s.state == GpuState::kAvailable || (request.force && s.state == GpuState::kUnreserved);
    anything = anything || (free && !claimed.count(s.gpu) &&
                            (considered.empty() || std::find(considered.begin(), considered.end(),
                                                             s.gpu) != considered.end()));
  }
  if (!anything) return std::vector<int>();
  ASSIGN_OR_RETURN(std::vector<GpuCandidate> candidates,
                   CandidatesBehind(txn, status, caller, now, id, claimed));
  auto usable = [&](int gpu) {
    const GpuCandidate& c = candidates[static_cast<size_t>(gpu)];
    return c.state == GpuCandidate::State::kFree ||
           (request.force && c.state == GpuCandidate::State::kInUse);
  };
  AllocationRequest want{.force = request.force, .eligible = request.eligible};
  if (!request.ids.empty()) {
    for (int gpu : request.ids) {
      if (std::find(held.begin(), held.end(), gpu) == held.end() && usable(gpu)) {
        want.ids.push_back(gpu);
      }
    }
    return want.ids;
  }
  int free = 0;
  for (int gpu = 0; gpu < static_cast<int>(candidates.size()); ++gpu) {
    free += IsEligible(request, gpu) && usable(gpu);
  }
  want.count = std::min(free, lacking);
  if (want.count == 0) return std::vector<int>();
  // Among more than it lacks, it leaves those a later waiter asks for by id
  // or selector, when it can do without them.
  std::vector<GpuCandidate> sparing = candidates;
  for (int gpu = 0; gpu < static_cast<int>(sparing.size()); ++gpu) {
    if (WantedSpecificallyAfter(queue, id, gpu)) {
      sparing[static_cast<size_t>(gpu)].state = GpuCandidate::State::kReserved;
    }
  }
  absl::StatusOr<std::vector<int>> spared = ChooseGpus(sparing, want);
  if (spared.ok()) return spared;
  return ChooseGpus(candidates, want);
}

// Removes the entry (if still there) and returns its holds.
absl::Status LeaveQueue(store::StateStore& store, int64_t id, const Machine& machine) {
  return store.Update([&](store::StateTransaction& txn) -> absl::Status {
    absl::Status deleted = txn.DeleteQueueEntry(id);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    const TimePoint now = machine.clock.Now();
    for (const Reservation& r : reservations) {
      if (r.queue_id == id) RETURN_IF_ERROR(End(txn, r, ReleaseReason::kCancelled, now));
    }
    return absl::OkStatus();
  });
}

struct PollResult {
  std::vector<int> ids;  // non-empty: done
  WaitProgress progress;
};

// Fills the progress of entry `id` as the state shows it, and returns the
// GPUs it already holds. Aborted when the entry is gone.
absl::StatusOr<std::vector<int>> ReadProgress(store::StateTransaction& txn, const PoolConfig& pool,
                                              int64_t id, const ReserveRequest& request,
                                              const std::vector<GpuUsage>& usage,
                                              std::vector<GpuStatus>* status,
                                              std::vector<QueueEntry>* queue_out,
                                              WaitProgress* progress) {
  ASSIGN_OR_RETURN(*queue_out, txn.ListQueue());
  const std::vector<QueueEntry>& queue = *queue_out;
  auto it =
      std::find_if(queue.begin(), queue.end(), [&](const QueueEntry& e) { return e.id == id; });
  if (it == queue.end()) {
    return absl::AbortedError("this request was removed from the queue (pool reinitialized?)");
  }
  progress->position = static_cast<int>(it - queue.begin()) + 1;
  progress->waiting = static_cast<int>(queue.size());
  progress->wanted = Wanted(request);
  ASSIGN_OR_RETURN(*status, StatusInTxn(txn, pool, usage, request.threshold_bytes));
  std::vector<int> held;
  for (const GpuStatus& s : *status) {
    if (s.reservation && s.reservation->queue_id == id) held.push_back(s.gpu);
  }
  progress->held = static_cast<int>(held.size());
  progress->blockers = Blockers(*status, id, Considered(request), ClaimedAhead(queue, *status, id));
  return held;
}

// With nothing stale and nothing this entry can take, a poll has nothing
// to write: it looks in a read transaction, so a crowd of waiters woken by
// every change does not line up for the write lock. Returns nullopt when the
// poll must write (something to take or to reap, or the entry is complete).
absl::StatusOr<std::optional<WaitProgress>> LookWithoutWriting(store::StateStore& store, int64_t id,
                                                               const Caller& caller,
                                                               const ReserveRequest& request,
                                                               const Machine& machine,
                                                               const std::vector<GpuUsage>& usage) {
  std::optional<WaitProgress> out;
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(PoolConfig pool, PoolIn(txn));
    ASSIGN_OR_RETURN(bool to_reap, internal::AnythingToReap(txn, machine));
    if (to_reap) return absl::OkStatus();
    WaitProgress progress;
    std::vector<GpuStatus> status;
    std::vector<QueueEntry> queue;
    ASSIGN_OR_RETURN(std::vector<int> held,
                     ReadProgress(txn, pool, id, request, usage, &status, &queue, &progress));
    if (progress.held >= progress.wanted) return absl::OkStatus();
    if (request.memory > 0) {
      absl::StatusOr<std::vector<int>> shares =
          SharesToTake(txn, status, queue, caller, request, id, machine.clock.Now());
      if (!shares.ok() && !absl::IsResourceExhausted(shares.status())) return shares.status();
      if (!shares.ok()) {
        progress.blockers = {std::string(shares.status().message())};
        out = std::move(progress);
      }
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(std::vector<int> take,
                     ToTake(txn, status, queue, caller, request, id, held, machine.clock.Now()));
    if (take.empty()) out = std::move(progress);
    return absl::OkStatus();
  }));
  return out;
}

// Where entry `id` stands now (1 = head): one read of the queue table.
absl::StatusOr<int> PositionOf(store::StateStore& store, int64_t id) {
  int position = 0;
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
    auto it =
        std::find_if(queue.begin(), queue.end(), [&](const QueueEntry& e) { return e.id == id; });
    if (it == queue.end()) return absl::AbortedError("this request left the queue");
    position = static_cast<int>(it - queue.begin()) + 1;
    return absl::OkStatus();
  }));
  return position;
}

// A share request's poll (no partial holds: a share needs its memory on
// every GPU at once): takes its shares and leaves the queue when they fit
// behind the waiters ahead, else says what is in the way.
absl::Status PollShares(store::StateTransaction& txn, const std::vector<GpuStatus>& status,
                        const std::vector<QueueEntry>& queue, const Caller& caller,
                        const ReserveRequest& request, int64_t id, TimePoint now, PollResult* out) {
  absl::StatusOr<std::vector<int>> shares =
      SharesToTake(txn, status, queue, caller, request, id, now);
  if (absl::IsResourceExhausted(shares.status())) {
    out->progress.blockers = {std::string(shares.status().message())};
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(shares.status());
  RETURN_IF_ERROR(txn.DeleteQueueEntry(id));
  RETURN_IF_ERROR(InsertShares(txn, *shares, status, caller, request, now));
  out->ids = *shares;
  return absl::OkStatus();
}

// One poll of entry `id`: take what is free that no earlier waiter can use;
// when complete, turn the holds into the reservations and leave the queue.
// `was_head`: the last poll found this entry at the head, which it stays
// until it leaves, and the head takes every free GPU it can use, so looking
// first would only cost a second transaction.
absl::StatusOr<PollResult> Poll(store::StateStore& store, int64_t id, const Caller& caller,
                                const ReserveRequest& request, const Machine& machine,
                                const std::vector<GpuUsage>& usage, bool was_head) {
  PollResult out;
  if (!was_head) {
    ASSIGN_OR_RETURN(std::optional<WaitProgress> looked,
                     LookWithoutWriting(store, id, caller, request, machine, usage));
    if (looked) {
      out.progress = std::move(*looked);
      return out;
    }
  }
  RETURN_IF_ERROR(store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(PoolConfig pool, PoolIn(txn));
    RETURN_IF_ERROR(ReapStale(txn, machine).status());
    RETURN_IF_ERROR(RecordUsage(txn, usage, request.threshold_bytes, machine.clock.Now()));
    std::vector<GpuStatus> status;
    std::vector<QueueEntry> queue;
    ASSIGN_OR_RETURN(std::vector<int> held,
                     ReadProgress(txn, pool, id, request, usage, &status, &queue, &out.progress));
    TimePoint now = machine.clock.Now();
    if (request.memory > 0) return PollShares(txn, status, queue, caller, request, id, now, &out);
    ASSIGN_OR_RETURN(std::vector<int> taken,
                     ToTake(txn, status, queue, caller, request, id, held, now));
    if (!taken.empty()) {
      for (int gpu : taken) {
        Reservation hold =
            NewReservation(gpu, caller, request, now, internal::ForcedOver(status[gpu], caller));
        hold.expires.reset();  // a manual duration counts from completion
        hold.queue_id = id;
        RETURN_IF_ERROR(txn.InsertReservation(hold));
        held.push_back(gpu);
      }
      out.progress.held = static_cast<int>(held.size());
      // What this entry just took is no longer someone else's to wait for.
      ASSIGN_OR_RETURN(status, StatusInTxn(txn, pool, usage, request.threshold_bytes));
      out.progress.blockers =
          Blockers(status, id, Considered(request), ClaimedAhead(queue, status, id));
    }
    if (static_cast<int>(held.size()) < Wanted(request)) return absl::OkStatus();
    // Complete: the holds become the reservation, from now.
    RETURN_IF_ERROR(txn.DeleteQueueEntry(id));
    ASSIGN_OR_RETURN(std::vector<Reservation> holds, txn.ListReservations());
    for (int gpu : held) {
      std::string forced_over;
      for (const Reservation& h : holds) {
        if (h.gpu == gpu) forced_over = h.forced_over;
      }
      RETURN_IF_ERROR(txn.DeleteReservation(gpu));
      RETURN_IF_ERROR(
          txn.InsertReservation(NewReservation(gpu, caller, request, now, forced_over)));
    }
    out.ids = held;
    return absl::OkStatus();
  }));
  std::sort(out.ids.begin(), out.ids.end());
  return out;
}

// Polls the queue entry `entry_id` until it is served, leaving the queue on
// an interrupt, on --wait running out or when the GPUs cannot be queried.
absl::StatusOr<std::vector<int>> WaitInQueue(store::StateStore& store, int64_t entry_id,
                                             const Caller& caller, const ReserveRequest& request,
                                             const Machine& machine, std::vector<GpuUsage> usage,
                                             const WaitOptions& options) {
  TimePoint enqueued = machine.clock.Now();
  bool was_head = false;
  for (;;) {
    absl::StatusOr<PollResult> poll =
        Poll(store, entry_id, caller, request, machine, usage, was_head);
    if (!poll.ok()) {
      if (!absl::IsAborted(poll.status())) LeaveQueue(store, entry_id, machine).IgnoreError();
      return poll.status();
    }
    if (!poll->ids.empty()) return poll->ids;
    was_head = poll->progress.position == 1;
    poll->progress.waited = std::chrono::duration_cast<Duration>(machine.clock.Now() - enqueued);
    if (options.on_progress) options.on_progress(poll->progress);
    if (options.max_wait && poll->progress.waited >= *options.max_wait) {
      RETURN_IF_ERROR(LeaveQueue(store, entry_id, machine));
      return absl::ResourceExhaustedError(StrCat("waited ", FormatDuration(*options.max_wait),
                                                 " (--wait) without getting ", Wanted(request),
                                                 " GPU(s); left the queue"));
    }
    // Until the next full poll: a change wakes everyone, but only the head
    // (which takes first) and the next in line (which takes over from a
    // head that completes or dies) act on it at once; the others only
    // re-read their position, so a long queue does not query GPUs and
    // processes on every commit, yet follows the queue as it moves. A GPU
    // that only they can use reaches them at their next full poll.
    int position = poll->progress.position;
    TimePoint next_poll = machine.clock.Now() + options.poll;
    for (;;) {
      auto left = std::chrono::duration_cast<Duration>(next_poll - machine.clock.Now());
      if (left <= Duration::zero()) break;
      WakeReason why = options.sleep(left);
      if (why == WakeReason::kSignal) {
        RETURN_IF_ERROR(LeaveQueue(store, entry_id, machine));
        return absl::CancelledError("interrupted while waiting in the queue; left the queue");
      }
      if (why == WakeReason::kTimeout || position <= 2) break;
      absl::StatusOr<int> now_at = PositionOf(store, entry_id);
      if (!now_at.ok() || *now_at <= 2) break;  // the full poll deals with errors
      position = *now_at;
    }
    absl::StatusOr<std::vector<GpuInfo>> gpus = options.query_gpus();
    if (!gpus.ok()) {
      // The provider broke while we waited: nothing can be handed out until
      // it is fixed, so say why now rather than wait behind GPUs in error.
      RETURN_IF_ERROR(LeaveQueue(store, entry_id, machine));
      return gpus.status();
    }
    usage = DescribeGpus(*gpus, machine.processes);
  }
}

// Puts the request at the back of the queue; returns its entry's id.
absl::StatusOr<int64_t> Enqueue(store::StateTransaction& txn, const Caller& caller,
                                const ReserveRequest& request, const ProcessRef& waiter,
                                TimePoint now) {
  QueueEntry entry{.uid = caller.uid,
                   .user = caller.user,
                   .display_user = request.display_user,
                   .kind = request.kind,
                   .count = Wanted(request),
                   .memory = request.memory,
                   .ids = request.ids,
                   .duration = request.duration,
                   .force = request.force,
                   .note = request.note,
                   .command = request.command,
                   .selector = request.selector,
                   .eligible = request.eligible,
                   .waiter = waiter,
                   .enqueued = now};
  return txn.InsertQueueEntry(entry);
}

}  // namespace

absl::StatusOr<std::vector<int>> AcquireGpus(store::StateStore& store, const Caller& caller,
                                             const ReserveRequest& request, const Machine& machine,
                                             const WaitOptions& options) {
  ASSIGN_OR_RETURN(std::vector<GpuInfo> first_gpus, options.query_gpus());
  std::vector<GpuUsage> usage = DescribeGpus(first_gpus, machine.processes);
  std::vector<int> chosen;
  int64_t entry_id = 0;
  RETURN_IF_ERROR(store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(PoolConfig pool, PoolIn(txn));
    RETURN_IF_ERROR(CheckPossible(request, pool));
    RETURN_IF_ERROR(ReapStale(txn, machine).status());
    RETURN_IF_ERROR(RecordUsage(txn, usage, request.threshold_bytes, machine.clock.Now()));
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
    TimePoint now = machine.clock.Now();
    // Served at once when what it asks for is free and no earlier waiter
    // can use it (backfill): taking it delays nobody who came first.
    ASSIGN_OR_RETURN(std::vector<GpuStatus> status,
                     StatusInTxn(txn, pool, usage, request.threshold_bytes));
    if (request.memory > 0) {
      absl::StatusOr<std::vector<int>> shares =
          SharesToTake(txn, status, queue, caller, request, std::nullopt, now);
      if (shares.ok()) {
        chosen = *shares;
        return InsertShares(txn, chosen, status, caller, request, now);
      }
      if (!absl::IsResourceExhausted(shares.status()) || !options.block) return shares.status();
      ASSIGN_OR_RETURN(entry_id, Enqueue(txn, caller, request, options.waiter, now));
      return absl::OkStatus();
    }
    const std::map<int, const QueueEntry*> claimed = ClaimedAhead(queue, status, std::nullopt);
    ASSIGN_OR_RETURN(std::vector<GpuCandidate> candidates,
                     CandidatesBehind(txn, status, caller, now, std::nullopt, claimed));
    const AllocationRequest want{.count = request.count,
                                 .ids = request.ids,
                                 .force = request.force,
                                 .eligible = request.eligible};
    absl::StatusOr<std::vector<int>> ids = ChooseGpus(candidates, want);
    if (ids.ok()) {
      chosen = *ids;
      for (int gpu : chosen) {
        RETURN_IF_ERROR(txn.InsertReservation(
            NewReservation(gpu, caller, request, now, internal::ForcedOver(status[gpu], caller))));
      }
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(ids.status())) return ids.status();
    absl::Status unavailable = ids.status();
    if (!queue.empty()) {
      // Say whether it is the waiters ahead that stand in the way.
      ASSIGN_OR_RETURN(candidates, Candidates(txn, status, caller, now, std::nullopt));
      unavailable = absl::ResourceExhaustedError(
          !claimed.empty() && ChooseGpus(candidates, want).ok()
              ? StrCat(queue.size(),
                       " request(s) already waiting for GPUs, and the free ones this request "
                       "could use are theirs: first come, first served (see 'canhazgpu queue')")
              : StrCat(ids.status().message(), "; ", queue.size(),
                       " request(s) already waiting ahead (see 'canhazgpu queue')"));
    }
    if (!options.block) return unavailable;
    ASSIGN_OR_RETURN(entry_id, Enqueue(txn, caller, request, options.waiter, now));
    return absl::OkStatus();
  }));
  if (entry_id == 0) {
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }
  return WaitInQueue(store, entry_id, caller, request, machine, std::move(usage), options);
}

absl::StatusOr<std::vector<int>> ReserveGpus(store::StateStore& store,
                                             const std::vector<GpuInfo>& gpus, const Caller& caller,
                                             const ReserveRequest& request,
                                             const Machine& machine) {
  WaitOptions options{.block = false,
                      .query_gpus = [&] { return absl::StatusOr<std::vector<GpuInfo>>(gpus); }};
  return AcquireGpus(store, caller, request, machine, options);
}

absl::StatusOr<std::vector<QueueRow>> CollectQueue(store::StateStore& store, const Machine& machine,
                                                   std::string* write_error) {
  std::vector<QueueRow> rows;
  auto collect = [&rows](const std::vector<QueueEntry>& queue,
                         const std::vector<Reservation>& reservations) {
    rows.clear();
    for (const QueueEntry& e : queue) {
      QueueRow row{.position = static_cast<int>(rows.size()) + 1, .entry = e};
      for (const Reservation& r : reservations) {
        if (r.queue_id == e.id) row.held.push_back(r.gpu);
      }
      rows.push_back(std::move(row));
    }
  };
  absl::Status written = store.Update([&](store::StateTransaction& txn) -> absl::Status {
    RETURN_IF_ERROR(ReapStale(txn, machine).status());
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    collect(queue, reservations);
    return absl::OkStatus();
  });
  if (written.ok()) return rows;
  // As CollectStatus: a view of a file that cannot be written, read-only.
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(internal::LiveState live, internal::LiveStateOf(txn, machine));
    collect(live.queue, live.reservations);
    return absl::OkStatus();
  }));
  if (write_error != nullptr) *write_error = std::string(written.message());
  return rows;
}

}  // namespace canhazgpu::alloc
