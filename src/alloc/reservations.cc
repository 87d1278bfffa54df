#include "alloc/reservations.h"

#include <algorithm>

#include "alloc/choose_gpus.h"
#include "alloc/report.h"
#include "alloc/reservations_internal.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::alloc {
namespace internal {

bool IsStale(const Reservation& r, const Machine& machine, ReleaseReason* reason) {
  // A Kubernetes claim's GPUs live until the driver unprepares the claim:
  // no time limit, and its pod's processes are not ours to watch.
  if (r.kind == ReservationKind::kK8s) return false;
  if (r.expires && machine.clock.Now() >= *r.expires) {
    *reason = ReleaseReason::kExpired;
    return true;
  }
  if (r.process) {
    // The job's processes tell, not the wrapper: a stopped (SIGSTOP) wrapper
    // whose job has exited must not hold the GPUs, and a SIGKILLed one must
    // not release a job whose processes still run (docs/jobs.md).
    host::JobIdentity job{.leader = *r.process,
                          .wrapper = r.wrapper,
                          .processes = r.job_processes,
                          .cgroup = r.job_cgroup};
    if (!machine.processes.JobAlive(job)) {
      *reason = ReleaseReason::kJobExited;
      return true;
    }
  }
  return false;
}

absl::Status End(store::StateTransaction& txn, const Reservation& r, ReleaseReason reason,
                 TimePoint now) {
  RETURN_IF_ERROR(txn.DeleteReservation(r.gpu, r.share));
  return txn.AppendHistory(EndReservation(r, now, reason));
}

std::string Describe(const Reservation& r, TimePoint now) {
  if (r.claim) return StrCat("reserved for Kubernetes ", DescribeClaim(*r.claim));
  std::string what = StrCat("reserved by ", r.user, " (", KindName(r.kind));
  if (r.expires)
    what += StrCat(", expires in ",
                   FormatDurationShort(std::chrono::duration_cast<Duration>(*r.expires - now)));
  if (r.process) what += StrCat(", pid ", r.process->pid);
  return what + ")";
}

std::string ForcedOver(const GpuStatus& s, const Caller& caller) {
  if (s.state != GpuState::kUnreserved) return "";
  std::vector<std::string> others;
  for (const ProcessUsage& p : s.processes) {
    // A process not visible here (another container) is nobody's own.
    if (p.user != "unknown" && p.uid == caller.uid) continue;
    if (std::find(others.begin(), others.end(), p.user) == others.end()) {
      others.push_back(p.user);
    }
  }
  // Busy without any process listed: whose it is cannot be told.
  if (s.processes.empty()) others.push_back("unknown");
  return Join(others, ",");
}

std::string DescribeUnreserved(const GpuStatus& s) {
  uint64_t used = s.info ? s.info->memory_used_bytes / kMiB : 0;
  std::vector<std::string> users = ProcessUsers(s.processes);
  return StrCat("in use without reservation (", used, " MiB",
                users.empty() ? "" : StrCat(" by ", Join(users, ", ")), ")");
}

absl::StatusOr<std::vector<GpuStatus>> StatusInTxn(store::StateTransaction& txn,
                                                   const PoolConfig& pool,
                                                   const std::vector<GpuUsage>& gpus,
                                                   uint64_t threshold,
                                                   const std::vector<Reservation>* reservations) {
  StatusInput input{.gpu_count = pool.gpu_count,
                    .provider = pool.provider,
                    .gpus = gpus,
                    .threshold_bytes = threshold};
  if (reservations != nullptr) {
    input.reservations = *reservations;
  } else {
    ASSIGN_OR_RETURN(input.reservations, txn.ListReservations());
  }
  for (int id = 0; id < pool.gpu_count; ++id) {
    ASSIGN_OR_RETURN(std::optional<TimePoint> released, txn.LastReleased(id));
    if (released) input.last_released[id] = *released;
  }
  return BuildStatus(input);
}

absl::StatusOr<PoolConfig> PoolIn(store::StateTransaction& txn) {
  ASSIGN_OR_RETURN(std::optional<PoolConfig> pool, txn.GetPool());
  if (!pool) {
    return absl::FailedPreconditionError(
        "GPU pool not initialized: run 'canhazgpu admin' (or 'canhazgpu admin --provider fake "
        "--gpus N' for a simulated host)");
  }
  return *pool;
}

absl::StatusOr<std::vector<GpuCandidate>> Candidates(store::StateTransaction& txn,
                                                     const std::vector<GpuStatus>& status,
                                                     const Caller& caller, TimePoint now,
                                                     std::optional<int64_t> queue_id) {
  std::vector<GpuCandidate> candidates;
  for (const GpuStatus& s : status) {
    GpuCandidate c{.last_released = s.last_released};
    ASSIGN_OR_RETURN(c.last_used_by_requester, txn.LastUsedBy(caller.uid, s.gpu));
    switch (s.state) {
      case GpuState::kAvailable:
        break;
      case GpuState::kInUse:
        c.state = GpuCandidate::State::kReserved;
        c.reason = Describe(*s.reservation, now);
        if (queue_id && s.reservation->queue_id == queue_id) c.reason = "already held";
        break;
      case GpuState::kUnreserved:
        c.state = GpuCandidate::State::kInUse;
        c.reason = DescribeUnreserved(s);
        // --force may override only the caller's own processes (root: any),
        // so one user cannot take a GPU another user is computing on.
        if (!caller.IsRoot() && !ForcedOver(s, caller).empty()) {
          c.state = GpuCandidate::State::kReserved;
          c.reason += "; --force takes only GPUs that your own processes use";
        }
        break;
      case GpuState::kError:
        c.state = GpuCandidate::State::kError;
        c.reason = StrCat("in error: ", s.error);
        break;
    }
    candidates.push_back(std::move(c));
  }
  return candidates;
}

}  // namespace internal

using namespace internal;  // NOLINT: this file's own helpers

absl::StatusOr<std::vector<HistoryRecord>> ReapStale(store::StateTransaction& txn,
                                                     const Machine& machine) {
  ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
  std::vector<HistoryRecord> ended;
  const TimePoint now = machine.clock.Now();
  for (const Reservation& r : reservations) {
    ReleaseReason reason;
    if (!IsStale(r, machine, &reason)) continue;
    RETURN_IF_ERROR(End(txn, r, reason, now));
    ended.push_back(EndReservation(r, now, reason));
  }
  // Waiters that died (SIGKILL, a crash) leave the queue, and their partial
  // holds return to the pool; so do holds of entries that are gone.
  ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
  std::vector<int64_t> live_entries;
  for (const QueueEntry& e : queue) {
    if (machine.processes.IsAlive(e.waiter)) {
      live_entries.push_back(e.id);
      continue;
    }
    RETURN_IF_ERROR(txn.DeleteQueueEntry(e.id));
  }
  ASSIGN_OR_RETURN(reservations, txn.ListReservations());
  for (const Reservation& r : reservations) {
    if (!r.queue_id ||
        std::find(live_entries.begin(), live_entries.end(), *r.queue_id) != live_entries.end()) {
      continue;
    }
    RETURN_IF_ERROR(End(txn, r, ReleaseReason::kCancelled, now));
    ended.push_back(EndReservation(r, now, ReleaseReason::kCancelled));
  }
  return ended;
}

absl::StatusOr<bool> internal::AnythingToReap(store::StateTransaction& txn,
                                              const Machine& machine) {
  ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
  ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
  std::vector<int64_t> live_entries;
  for (const QueueEntry& e : queue) {
    if (!machine.processes.IsAlive(e.waiter)) return true;
    live_entries.push_back(e.id);
  }
  for (const Reservation& r : reservations) {
    ReleaseReason reason;
    if (IsStale(r, machine, &reason)) return true;
    if (r.queue_id &&
        std::find(live_entries.begin(), live_entries.end(), *r.queue_id) == live_entries.end()) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<internal::LiveState> internal::LiveStateOf(store::StateTransaction& txn,
                                                          const Machine& machine) {
  LiveState out;
  ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
  for (QueueEntry& e : queue) {
    if (machine.processes.IsAlive(e.waiter)) out.queue.push_back(std::move(e));
  }
  auto live_entry = [&](int64_t id) {
    return std::any_of(out.queue.begin(), out.queue.end(),
                       [id](const QueueEntry& e) { return e.id == id; });
  };
  ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
  for (Reservation& r : reservations) {
    ReleaseReason reason;
    if (IsStale(r, machine, &reason) || (r.queue_id && !live_entry(*r.queue_id))) continue;
    out.reservations.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<PoolConfig> ReadPool(store::StateStore& store) {
  PoolConfig pool;
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(pool, PoolIn(txn));
    return absl::OkStatus();
  }));
  return pool;
}

absl::Status InitializePool(store::StateStore& store, const PoolConfig& pool, bool force,
                            const Machine& machine, int* released, PodReservations pods) {
  if (pool.gpu_count < 1 || pool.gpu_count > kMaxGpus) {
    return absl::InvalidArgumentError(
        StrCat("a pool of ", pool.gpu_count, " GPUs: must be from 1 to ", kMaxGpus));
  }
  return store.Update([&](store::StateTransaction& txn) -> absl::Status {
    absl::StatusOr<std::optional<PoolConfig>> read = txn.GetPool();
    // --force sets again a pool the store refuses to load (one larger than
    // kMaxGpus, written before that bound): that is the way out it names.
    if (!read.ok() && !(force && absl::IsFailedPrecondition(read.status()))) return read.status();
    std::optional<PoolConfig> existing = read.ok() ? *read : std::nullopt;
    if (existing && !force) {
      return absl::FailedPreconditionError(
          StrCat("GPU pool already initialized with ", existing->gpu_count, " GPUs (provider ",
                 existing->provider, "); use --force to reinitialize"));
    }
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    // A pod's container keeps its GPU whatever the store says; without its
    // reservation a local user is handed that GPU too. Checked in this
    // transaction, so a claim prepared meanwhile is not missed.
    std::vector<std::string> pod_gpus;
    for (const Reservation& r : reservations) {
      if (r.kind == ReservationKind::kK8s && r.claim) {
        pod_gpus.push_back(StrCat("gpu ", r.gpu, " for ", DescribeClaim(*r.claim)));
      }
    }
    if (!pod_gpus.empty() && pods == PodReservations::kRefuse) {
      const bool one = pod_gpus.size() == 1;
      return absl::FailedPreconditionError(StrCat(
          Join(pod_gpus, ", "), ": prepared for Kubernetes, and the pod",
          one ? " keeps running on it" : "s keep running on them", "; --force would hand ",
          one ? "it" : "them", " to local users as well: add --drop-pod-reservations to end ",
          one ? "that reservation" : "those reservations",
          " anyway (k8shazgpu-node puts back those of claims still prepared)"));
    }
    const TimePoint now = machine.clock.Now();
    for (const Reservation& r : reservations) {
      RETURN_IF_ERROR(End(txn, r, ReleaseReason::kAdminReset, now));
    }
    // Waiting requests were made against the old pool: they end too (their
    // waiters report that they were removed from the queue).
    ASSIGN_OR_RETURN(std::vector<QueueEntry> queue, txn.ListQueue());
    for (const QueueEntry& e : queue) RETURN_IF_ERROR(txn.DeleteQueueEntry(e.id));
    if (released != nullptr) *released = static_cast<int>(reservations.size());
    return txn.SetPool(pool);
  });
}

namespace {

// Whether `caller` may end `r` by naming its GPU (`release --gpu-ids`).
absl::Status MayEnd(const Reservation& r, const Caller& caller, bool force) {
  // Its pod is computing on it: not even root's --force ends it here
  // (`admin --force` resets the whole pool, this included).
  if (r.kind == ReservationKind::kK8s) {
    return absl::FailedPreconditionError(
        StrCat("gpu ", r.gpu, " belongs to Kubernetes ",
               r.claim ? DescribeClaim(*r.claim) : std::string("claim"),
               "; it is released by deleting the pod or the claim"));
  }
  if (r.uid != caller.uid && !(caller.IsRoot() && force)) {
    return absl::PermissionDeniedError(
        StrCat("gpu ", r.gpu, " is reserved by ", r.user, "; only ", r.user,
               caller.IsRoot() ? " can release it, or root with --force"
                               : " (or root with --force) can release it"));
  }
  if (r.queue_id) {
    return absl::FailedPreconditionError(
        StrCat("gpu ", r.gpu,
               " is held for a request waiting in the queue; interrupt that "
               "request to give it back"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ReleaseGpus(store::StateStore& store, const Caller& caller,
                                             const std::vector<int>& ids, bool force,
                                             const Machine& machine) {
  std::vector<int> released;
  RETURN_IF_ERROR(store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(PoolConfig pool, PoolIn(txn));
    RETURN_IF_ERROR(ReapStale(txn, machine).status());
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    // What of GPU `id` the caller would end: its own reservations there (a
    // shared GPU may hold several users' shares), or with root's --force
    // every one; otherwise the first holder, whom the refusal names.
    auto held = [&](int id) {
      std::vector<const Reservation*> on, mine;
      for (const Reservation& r : reservations) {
        if (r.gpu != id) continue;
        on.push_back(&r);
        if (r.uid == caller.uid || (caller.IsRoot() && force)) mine.push_back(&r);
      }
      if (mine.empty() && !on.empty()) mine.push_back(on.front());
      return mine;
    };
    std::vector<const Reservation*> to_end;
    if (ids.empty()) {
      for (const Reservation& r : reservations) {
        // Partial holds belong to a waiting request, which still needs them.
        if (r.uid == caller.uid && r.kind == ReservationKind::kManual && !r.queue_id) {
          to_end.push_back(&r);
        }
      }
    }
    for (int id : ids) {
      if (id >= pool.gpu_count) {
        return absl::InvalidArgumentError(
            StrCat("gpu id ", id, " is out of range: the pool has GPUs 0-", pool.gpu_count - 1));
      }
      const std::vector<const Reservation*> parts = held(id);
      if (parts.empty())
        return absl::FailedPreconditionError(StrCat("gpu ", id, " is not reserved"));
      for (const Reservation* r : parts) RETURN_IF_ERROR(MayEnd(*r, caller, force));
      to_end.insert(to_end.end(), parts.begin(), parts.end());
    }
    const TimePoint now = machine.clock.Now();
    for (const Reservation* r : to_end) {
      RETURN_IF_ERROR(End(txn, *r, ReleaseReason::kReleased, now));
      released.push_back(r->gpu);
    }
    return absl::OkStatus();
  }));
  std::sort(released.begin(), released.end());
  // Two shares of one GPU are one GPU released.
  released.erase(std::unique(released.begin(), released.end()), released.end());
  return released;
}

absl::Status ReleaseJob(store::StateStore& store, const ProcessRef& process,
                        const Machine& machine) {
  return store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    const TimePoint now = machine.clock.Now();
    for (const Reservation& r : reservations) {
      if (r.process == process) RETURN_IF_ERROR(End(txn, r, ReleaseReason::kJobExited, now));
    }
    return absl::OkStatus();
  });
}

absl::Status MarkCommandExited(store::StateStore& store, const ProcessRef& process,
                               const Machine& machine) {
  return store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    for (Reservation r : reservations) {
      if (r.process != process || r.command_exited) continue;
      r.command_exited = machine.clock.Now();
      RETURN_IF_ERROR(txn.DeleteReservation(r.gpu, r.share));
      RETURN_IF_ERROR(txn.InsertReservation(r));
    }
    return absl::OkStatus();
  });
}

absl::Status RecordJobProcesses(store::StateStore& store, const ProcessRef& process,
                                const std::vector<ProcessRef>& processes, const Machine&) {
  return store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<Reservation> reservations, txn.ListReservations());
    for (Reservation r : reservations) {
      if (r.process != process || r.job_processes == processes) continue;
      r.job_processes = processes;
      RETURN_IF_ERROR(txn.DeleteReservation(r.gpu, r.share));
      RETURN_IF_ERROR(txn.InsertReservation(r));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<HostStatus> CollectStatus(store::StateStore& store, const std::vector<GpuInfo>& gpus,
                                         uint64_t threshold_bytes, const Machine& machine) {
  std::vector<GpuUsage> usage = DescribeGpus(gpus, machine.processes);
  HostStatus out{.threshold_bytes = threshold_bytes};
  absl::Status written = store.Update([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out.pool, PoolIn(txn));
    RETURN_IF_ERROR(ReapStale(txn, machine).status());
    RETURN_IF_ERROR(RecordUsage(txn, usage, threshold_bytes, machine.clock.Now()));
    ASSIGN_OR_RETURN(out.gpus, StatusInTxn(txn, out.pool, usage, threshold_bytes));
    return absl::OkStatus();
  });
  if (written.ok()) return out;
  // A view must not fail because the state file cannot be written (read-only,
  // disk full, locked): it shows what the file holds, leaving out what
  // reaping would end, and says that it could not write. A file that cannot
  // be read fails here too, with that reason.
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out.pool, PoolIn(txn));
    ASSIGN_OR_RETURN(LiveState live, LiveStateOf(txn, machine));
    ASSIGN_OR_RETURN(out.gpus,
                     StatusInTxn(txn, out.pool, usage, threshold_bytes, &live.reservations));
    return absl::OkStatus();
  }));
  out.write_error = std::string(written.message());
  return out;
}

}  // namespace canhazgpu::alloc
