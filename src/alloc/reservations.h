// The reservation lifecycle on one host, over the StateStore: initialise the
// pool, reserve, release, release a finished job, and collect status. Each
// operation is one store transaction that first reaps what is stale
// (expired manual reservations, run reservations whose job is gone), so no
// command ever sees or hands out a dead reservation. The slow parts stay out
// of the critical section: the caller queries the GPUs, and the GPUs'
// processes are described from /proc before the write transaction begins.
// Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/gpu_status.h"
#include "core/clock.h"
#include "core/gpu.h"
#include "core/reservation.h"
#include "host/process_table.h"
#include "store/state_store.h"

namespace canhazgpu::alloc {

// Who asks: from the OS (getuid), never from $USER.
struct Caller {
  uint32_t uid = 0;
  std::string user;
  bool IsRoot() const { return uid == 0; }
};

// The machine, as the lifecycle needs it.
struct Machine {
  const Clock& clock;
  const host::ProcessTable& processes;
};

// Ends stale reservations inside `txn`, recording them in the history.
absl::StatusOr<std::vector<HistoryRecord>> ReapStale(store::StateTransaction& txn,
                                                     const Machine& machine);

// The pool, or FailedPrecondition telling the user to run `admin`.
absl::StatusOr<PoolConfig> ReadPool(store::StateStore& store);

// What `force` does to reservations of kind k8s: GPUs prepared for the
// ResourceClaims of pods that may still run on them.
enum class PodReservations {
  kRefuse,  // FailedPrecondition while there are any, naming them
  kDrop,    // end them with the rest
};

// Sets the pool. Without `force`, an initialised pool is an error; with it,
// every reservation ends (history reason admin_reset), those of pods only
// with PodReservations::kDrop.
absl::Status InitializePool(store::StateStore& store, const PoolConfig& pool, bool force,
                            const Machine& machine, int* released = nullptr,
                            PodReservations pods = PodReservations::kRefuse);

struct ReserveRequest {
  int count = 1;
  std::vector<int> ids;
  bool force = false;
  ReservationKind kind = ReservationKind::kManual;
  std::optional<Duration> duration;       // manual
  std::optional<ProcessRef> process;      // run: the job's leader
  std::optional<ProcessRef> wrapper;      // run: the `canhazgpu run` watching it
  std::optional<std::string> job_cgroup;  // run: the job's own cgroup, if any
  std::string note;
  std::string command;
  std::string display_user;  // --user: shown beside the caller's name
  // GPUs that are what the request asks for (dra::SelectHostGpus), ascending;
  // nullopt: any GPU. `selector` says what, for the queue.
  std::optional<std::vector<int>> eligible;
  std::string selector;
  uint64_t threshold_bytes = kDefaultMemoryThresholdMiB * kMiB;
  // --gpu-mem: a share of this many bytes (a whole number of MiB) on each
  // of `count` distinct GPUs (alloc/shares.h); 0: whole GPUs.
  uint64_t memory = 0;
};

// Reserves atomically without waiting: AcquireGpus() with block = false
// (queue.h), so it takes only free GPUs that no request waiting in the
// queue can use (backfill), never delaying one. Returns the ids sorted
// ascending; see ChooseGpus() for the error codes.
absl::StatusOr<std::vector<int>> ReserveGpus(store::StateStore& store,
                                             const std::vector<GpuInfo>& gpus, const Caller& caller,
                                             const ReserveRequest& request, const Machine& machine);

// Without ids: every MANUAL reservation of the caller. With ids: those GPUs,
// which must be the caller's (any kind), or anyone's for root with `force`.
// All or nothing. Returns the released ids; an empty result is not an error.
absl::StatusOr<std::vector<int>> ReleaseGpus(store::StateStore& store, const Caller& caller,
                                             const std::vector<int>& ids, bool force,
                                             const Machine& machine);

// Ends the reservations held by the job `process` (history: job_exited).
absl::Status ReleaseJob(store::StateStore& store, const ProcessRef& process,
                        const Machine& machine);

// Notes on the job's reservations that the command itself has exited while
// other processes of the job still run (status shows it).
absl::Status MarkCommandExited(store::StateStore& store, const ProcessRef& process,
                               const Machine& machine);

// Records on the job's reservations its processes outside its process
// group, as the wrapper found them among its descendants; they keep the
// reservations alive should the wrapper die (docs/jobs.md).
absl::Status RecordJobProcesses(store::StateStore& store, const ProcessRef& process,
                                const std::vector<ProcessRef>& processes, const Machine& machine);

struct HostStatus {
  PoolConfig pool;
  uint64_t threshold_bytes = 0;
  std::vector<GpuStatus> gpus;
  // Set when the state file could not be written (stale reservations not
  // ended, no usage sample): the view is read-only, and this says why.
  std::string write_error;
};

// Ends what is stale and samples usage, best effort: when the state file
// cannot be written the status is still collected, read-only (write_error).
absl::StatusOr<HostStatus> CollectStatus(store::StateStore& store, const std::vector<GpuInfo>& gpus,
                                         uint64_t threshold_bytes, const Machine& machine);

}  // namespace canhazgpu::alloc
