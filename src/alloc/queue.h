// Getting GPUs: first come, first served, with backfill. Waiting requests
// form one queue in arrival order, and the rule is:
//
//   A free GPU goes to the earliest waiter that can use it. A waiter can use
//   a GPU when it asks for it (one of its --gpu-ids; else one its selector
//   matched; else any GPU), does not hold it yet, and still lacks GPUs; with
//   --force, a GPU in use without reservation by its own user's processes
//   (root: anyone's) counts as free for it. Going down the queue, each waiter
//   gets, among the free GPUs no earlier waiter got, those it can use, up to
//   the number it lacks.
//
// So a later request (a newcomer, or a waiter further back) may take exactly
// the free GPUs that no earlier waiter can use: it never delays anyone who
// came first, and a GPU is never left idle while someone waits who could use
// it. A newcomer whose request is met by such GPUs is served at once and
// never queued (ReserveGpus(), `reserve --nonblock`, follows the same rule);
// otherwise it joins the queue (or, non-blocking, fails).
//
// Every waiter takes what it gets as holds (reservations tagged with its
// entry) until it has all it asked for, so many small requests cannot starve
// a big one. A count waiter always completes in time (it never asks for more
// than the pool or its selector has), so what it can use is never handed to
// someone behind it. A waiter with more usable GPUs than it lacks prefers
// those no later waiter asks for by id or selector. A request for specific
// ids holds each of them as it frees, until it has them all.
//
// Shares (--gpu-mem) wait in the same line under the same rule, counted in
// memory (ShareRoomsBehind() in backfill.h): a later share may have only
// the room no earlier waiter needs. A whole-GPU waiter needs the free GPUs
// it would take now and, for what it still lacks, as many of the shared
// GPUs it could use (the least used first): no new share lands there while
// it waits for their shares to end. A share waiter needs its memory on the
// GPUs it would get now, or else on those it waits for. So a stream of
// small shares starves neither a whole-GPU waiter nor a large share, and
// each waits with a reason naming whom it waits behind. A share waiter
// takes all its shares at once (no partial holds of memory).
//
// The waiter drives its own entry: every poll is one store transaction that
// reaps what is stale (including waiters that died: their entries and holds
// go) and takes what the rule gives it. A poll that has nothing to take reads
// without writing. A waiter that gives up (signal, --wait expired) removes
// its entry and returns its holds in one transaction. Thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"

namespace canhazgpu::alloc {

struct WaitProgress {
  int position = 0;  // 1 = head
  int waiting = 0;   // entries in the queue
  int held = 0;
  int wanted = 0;
  Duration waited{0};
  // Who holds what this request waits for: "alice (0,1)", "in use without
  // reservation (3)", "bob (queued ahead) (2)" (a GPU an earlier waiter holds
  // or is about to take).
  std::vector<std::string> blockers;
};

enum class WakeReason { kTimeout, kChanged, kSignal };

struct WaitOptions {
  bool block = true;                 // false: fail at once (--nonblock)
  std::optional<Duration> max_wait;  // --wait
  ProcessRef waiter;                 // this process: its death cancels the entry
  Duration poll = std::chrono::milliseconds(100);
  // The GPUs as the provider reports them now.
  // A failure of the provider as a whole ends the wait with that error.
  std::function<absl::StatusOr<std::vector<GpuInfo>>()> query_gpus;
  // Sleeps up to `d`, returning early when the wait must end (a signal) or
  // when the state may have changed (another process committed).
  std::function<WakeReason(Duration d)> sleep;
  // After every poll while waiting.
  std::function<void(const WaitProgress&)> on_progress;
};

// Reserves, waiting in the queue when the request cannot be served now. Errors: InvalidArgument
// (can never be served; never queued), ResourceExhausted (non-blocking and unavailable, or --wait
// expired), Cancelled (the sleep function said stop), Aborted (the entry was removed by someone
// else, e.g. `admin --force`). Returns the ids sorted ascending.
absl::StatusOr<std::vector<int>> AcquireGpus(store::StateStore& store, const Caller& caller,
                                             const ReserveRequest& request, const Machine& machine,
                                             const WaitOptions& options);

struct QueueRow {
  int position = 0;
  QueueEntry entry;
  std::vector<int> held;
};

// The queue after reaping dead waiters, head first. When the state file
// cannot be written, dead waiters are only left out, and `*write_error`
// (if given) says why.
absl::StatusOr<std::vector<QueueRow>> CollectQueue(store::StateStore& store, const Machine& machine,
                                                   std::string* write_error = nullptr);

}  // namespace canhazgpu::alloc
