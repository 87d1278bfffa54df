// Getting GPUs, first come first served. A request is served at once only
// when nobody waits; otherwise it joins the queue (or, non-blocking, fails).
// The head of the queue takes GPUs as they free up and holds them (partial
// holds: reservations tagged with its entry) until it has all it asked for,
// so many small requests cannot starve a big one. Entries behind the head get
// nothing meanwhile. Requests for specific ids wait for those ids.
//
// The waiter drives its own entry: every poll is one store transaction that
// reaps what is stale (including waiters that died: their entries and holds
// go) and, at the head, takes what is free. A waiter that gives up (signal,
// --wait expired) removes its entry and returns its holds in one transaction.
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
  // Who holds what this request waits for: "alice (0,1)", "unreserved (3)".
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
// expired), Cancelled (sleep() said stop), Aborted (the entry was removed by someone else, e.g.
// `admin --force`). Returns the ids sorted ascending.
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
