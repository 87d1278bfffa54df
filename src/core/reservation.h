// The vocabulary of the state store: the pool, reservations and the release
// history. Plain values; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace canhazgpu {

// kK8s: a GPU prepared for a Kubernetes ResourceClaim by k8shazgpu-node
// (store/claim_reservations.h). It never expires and has no process to
// watch: it lives until the driver unprepares the claim or `admin --force`
// resets the pool. No local command (release, reserve --force) ends it.
enum class ReservationKind { kRun, kManual, kK8s };

// "run" / "manual" / "k8s", the spelling stored in the state file.
std::string_view KindName(ReservationKind kind);
// "RUN" / "MANUAL" / "K8S", canhazgpu's display spelling.
std::string_view KindLabel(ReservationKind kind);
std::optional<ReservationKind> ParseKind(std::string_view name);

// Identifies one process for its whole life: a pid alone can be reused, but
// (pid, start time in clock ticks since boot) cannot.
struct ProcessRef {
  int64_t pid = 0;
  uint64_t start_ticks = 0;
  bool operator==(const ProcessRef&) const = default;
};

// "pid:start pid:start ...", the form the state file keeps a list in; and
// back (nullopt on malformed text; "" is the empty list).
std::string FormatProcessRefs(const std::vector<ProcessRef>& refs);
std::optional<std::vector<ProcessRef>> ParseProcessRefs(std::string_view text);

// The GPU pool as `admin` configured it.
struct PoolConfig {
  int gpu_count = 0;
  std::string provider;   // "nvidia", "amd" or "fake"
  std::string fake_host;  // simulated-host JSON file, for provider "fake"
};

// The Kubernetes ResourceClaim a K8S reservation serves. Plain strings: the
// store knows nothing else of Kubernetes.
struct KubeClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;  // metadata.uid: the claim's identity
  std::string pod;  // the pod using it; empty when unknown
  bool operator==(const KubeClaimRef&) const = default;
};

// "claim ns/name (pod p)", or "claim ns/name" when the pod is unknown.
std::string DescribeClaim(const KubeClaimRef& claim);

// The margin of a GPU's memory left to the driver's own use: never shared
// (ADR 0018, KAI#2212).
inline constexpr uint64_t kShareMarginBytes = uint64_t{512} << 20;
inline constexpr uint64_t kShareStepBytes = uint64_t{1} << 20;  // shares count in MiB

// What of a GPU with `total_bytes` of memory shares may hold together: the
// total less kShareMarginBytes, rounded down to a MiB; 0 when nothing is left.
uint64_t ShareableMemory(uint64_t total_bytes);
// `bytes` rounded up to a whole MiB, as a share request is.
uint64_t RoundUpToShareStep(uint64_t bytes);

// One GPU, or one share of a GPU's memory, held by one user. The store keys
// reservations by (gpu, share): a GPU is held either whole by one
// reservation or by shares whose memory sums to at most its shareable
// memory (ADR 0018).
struct Reservation {
  int gpu = 0;
  // Bytes of the GPU's memory this reservation holds; 0: the whole GPU (every
  // reservation before sharing).
  uint64_t memory = 0;
  // The share's id (a fresh UUID for a local share, the allocation's shareID
  // for a pod); empty exactly for a whole GPU.
  std::string share;
  // For a share: the GPU's shareable memory (ShareableMemory()) when the
  // share was made, so the store checks the sum without probing the GPU.
  uint64_t shareable = 0;
  bool IsShare() const { return memory > 0; }
  uint32_t uid = 0;
  std::string user;
  // The name the holder gave with --user (a person behind a shared account),
  // shown beside `user`; empty when none. It grants nothing: the
  // reservation is `uid`'s.
  std::string display_user;
  ReservationKind kind = ReservationKind::kManual;
  TimePoint start;
  std::optional<TimePoint> expires;  // manual reservations
  // run reservations: the job's first process, which leads the job's own
  // process group (pgid == pid), and the `canhazgpu run` wrapper watching it.
  // The job lives while the wrapper, the leader or any member of the group
  // does.
  std::optional<ProcessRef> process;
  std::optional<ProcessRef> wrapper;
  // run reservations: when the command itself exited while other processes of
  // the job kept running (the release waits for them).
  std::optional<TimePoint> command_exited;
  // run reservations: processes of the job that left its process group
  // (setsid daemons, setpgid workers), as the wrapper last found them among
  // its descendants. The job also lives while any of these does.
  std::vector<ProcessRef> job_processes;
  // run reservations: the job's own cgroup v2 directory, where the host
  // offered one (docs/jobs.md). The job also lives while it has a process.
  std::optional<std::string> job_cgroup;
  // A forced reservation over unreserved use by other users' processes (root
  // only): those users, comma-separated; empty otherwise.
  std::string forced_over;
  // Set while the GPU is a partial hold of a waiting queue entry.
  std::optional<int64_t> queue_id;
  std::string note;
  std::string command;  // run reservations: the command line, for status
  // k8s reservations (only): the claim. `user` is then the pod's
  // canhazgpu.dev/user label, or "k8s:<namespace>" when it has none, and
  // `uid` that user's uid where the driver could resolve it, else 0. The uid
  // of a k8s reservation never grants anything: no local command may end it.
  std::optional<KubeClaimRef> claim;
};

// A request waiting in the first-come-first-served queue. The GPUs it holds
// so far are reservations whose queue_id is this entry's id.
struct QueueEntry {
  int64_t id = 0;  // assigned by the store, increasing: the queue order
  uint32_t uid = 0;
  std::string user;
  std::string display_user;  // as Reservation::display_user
  ReservationKind kind = ReservationKind::kManual;
  int count = 0;  // GPUs wanted in total (the number of ids, if any)
  // --gpu-mem: bytes wanted on each of `count` distinct GPUs (one share
  // each); 0: whole GPUs.
  uint64_t memory = 0;
  std::vector<int> ids;              // specific GPUs, or empty for any `count`
  std::optional<Duration> duration;  // manual: counted from completion
  bool force = false;                // may take GPUs in use without reservation
  std::string note;
  std::string command;
  // What the GPUs must be, as the flags said ("--min-memory 40Gi"); empty: any.
  std::string selector;
  // The GPUs that selector matched when the request was made, ascending;
  // nullopt: any GPU. Waiters behind this one read it to leave these GPUs
  // to it (backfill, alloc/queue.h).
  std::optional<std::vector<int>> eligible;
  ProcessRef waiter;  // the waiting canhazgpu process: gone means cancelled
  TimePoint enqueued;
};

// Why a reservation ended, as kept in the history.
// kCancelled: a partial hold returned when its queue entry left the queue.
enum class ReleaseReason { kReleased, kExpired, kJobExited, kAdminReset, kCancelled };
std::string_view ReasonName(ReleaseReason reason);
std::optional<ReleaseReason> ParseReason(std::string_view name);

struct HistoryRecord {
  int gpu = 0;
  uint64_t memory = 0;  // a share's bytes; 0: the whole GPU
  // A share's GPU's shareable memory when the share was made (as
  // Reservation::shareable), so `report` counts the share as its part of
  // the GPU; 0 for a whole GPU, and for shares ended before schema 11.
  uint64_t shareable = 0;
  uint32_t uid = 0;
  std::string user;
  ReservationKind kind = ReservationKind::kManual;
  TimePoint start;
  TimePoint end;
  ReleaseReason reason = ReleaseReason::kReleased;
  std::string note;
};

// What a GPU was doing when canhazgpu last looked at it: the raw material
// of `report`'s busy/idle split. Sampling is opportunistic (status, queue
// polls, the dashboard), so reports treat time without samples as unknown.
struct UsageSample {
  int gpu = 0;
  TimePoint at;
  uint64_t memory_used_bytes = 0;
  bool busy = false;  // memory used above the threshold
};

// The history record of `r` ending. A k8s reservation's claim is kept in
// the record's note ("claim ns/name (pod p)", after the note if any).
HistoryRecord EndReservation(const Reservation& r, TimePoint end, ReleaseReason reason);

}  // namespace canhazgpu
