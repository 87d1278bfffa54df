// What `k8shazgpu run` (and `vllm run`) is asked to do, read from its flags:
// which GPUs (a count and what they must be, or exact ones on a node), the
// container (image, argv, env, port) and how to run it (deadline, detach,
// a shared claim). Parsing checks everything that can be checked without
// the cluster - conflicting flags, values, the CEL of --where - so that a
// bad command line creates nothing. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "dra/host_selection.h"

namespace canhazgpu::cli::k8s {

// -G NODE:ID,...: exact GPUs (their `index` attribute) on one node.
struct PinnedGpus {
  std::string node;
  std::vector<int64_t> indices;
};

struct RunRequest {
  int gpus = 1;
  std::optional<PinnedGpus> pinned;
  dra::DeviceWants wants;  // --where, --min-memory, --product, --mig
  // --gpu-mem: bytes of each GPU's memory (a share, ADR 0018), asked for as
  // the claim's capacity request; nullopt: whole GPUs.
  std::optional<uint64_t> gpu_mem;
  std::string device_class;  // --class; empty: discovered
  std::string share;         // --share: a named claim several runs use
  // --share-with: who else may join a shared claim this run creates (user
  // label values, or "*" for anyone); its creator always may.
  std::vector<std::string> share_with;
  std::string node;  // --node (or the -G node)
  std::string image;
  // Where the image came from when not --image ("the built-in default",
  // "K8SHAZGPU_IMAGE", the cluster's defaults): said in the output.
  std::string image_origin;
  std::string name;                                      // --name; empty: generated
  std::string note;                                      // --note: shown in status, queue, explain
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V, in order
  std::optional<int> port;
  std::optional<int64_t> timeout_seconds;  // --timeout -> activeDeadlineSeconds
  bool detach = false;
  // --keep: a followed run's pod and template stay after it ends (for
  // kubectl describe); otherwise they are deleted once its output is read.
  bool keep = false;
  // A run that is not followed to its end (--detach, or Ctrl-C then
  // detach) is swept by a later command of its user this long after it
  // ended (--ttl); none with --keep.
  std::optional<int64_t> ttl_seconds;
  std::vector<std::string> argv;  // after `--`, exactly as given
  bool shared_memory = false;     // an emptyDir of medium Memory at /dev/shm (vllm)
  // `reserve`: a placeholder pod, labelled a reservation; Run() returns once
  // it runs (printing where and what it holds), and deletes what it made
  // when it does not run within `wait_seconds` or is interrupted before.
  bool reservation = false;
  // --wait: give up (exit 3) after waiting in line this long; --nonblock:
  // do not wait in line at all - the request must fit now.
  std::optional<int64_t> wait_seconds;
  bool nonblock = false;
  bool short_output = false;  // reserve --short: only the devices on stdout
  // --nodes N: a multi-node run of N ranks, one per node, each with `gpus`
  // devices (--gpus-per-node), admitted all at once (ADR 0019); 0: one pod.
  int nodes = 0;
  // --logs RANK: copy only this rank's output (multi-node runs); all when unset.
  std::optional<int> logs_rank;
  // --queue NAME: let Kueue admit the multi-node run from this LocalQueue.
  std::string kueue_queue;
};

// The most ranks one multi-node run may have.
inline constexpr int kMaxRunNodes = 64;

// The defaults a front-end (run, vllm run) gives where a flag is absent.
struct RunDefaults {
  std::string image;
  std::optional<int> port;
  bool shared_memory = false;
};

// The most devices one run may ask for.
inline constexpr int kMaxRunGpus = 128;

// Which devices, where: the shared device selection (cli/common's
// --gpus, --where, --min-memory, --product, --mig), -G NODE:IDS, --class
// and --node. Every command that places a pod takes all of them (run,
// vllm run, reserve), so a new one is never missing from one of them.
std::vector<FlagSpec> PlacementFlags();

// The pod itself: --image, --name, --note.
std::vector<FlagSpec> PodFlags();

// Waiting in line, as the host tool does: -w/--wait D and --nonblock
// (exit 3 either way when the GPUs are not had).
std::vector<FlagSpec> WaitFlags();

// How long a finished run that nobody followed to its end stays before a
// later command of its user deletes it (--ttl's default).
inline constexpr char kDefaultRunTtl[] = "1h";

// --nonblock: the request fit when it was checked, but another user may
// take the devices before the scheduler places the pod; this long for the
// scheduler, then exit 3 as if it had not fit.
inline constexpr int64_t kNonblockPlacementSeconds = 10;

// A multi-node run's flags: --nodes, --gpus-per-node, --logs, --queue.
std::vector<FlagSpec> GangFlags();

// The flags of `run`: placement, --share, the pod, the command's
// environment and lifecycle, without the global ones; `vllm run` takes the
// same.
std::vector<FlagSpec> RunFlags();

// The request the flags describe. InvalidArgument, one line, for a bad
// value or conflicting flags (--gpus with -G, --mig with -G, --node with
// another -G node, a missing command, an --env without '=', a --where that
// does not compile: with its position, --wait with --nonblock, a --note of
// several lines).
absl::StatusOr<RunRequest> ParseRunRequest(const ParsedFlags& flags, const RunDefaults& defaults);

// The duration `text` of --`flag` in whole seconds, rounded up, at least 1
// (as activeDeadlineSeconds wants); InvalidArgument naming the flag.
absl::StatusOr<int64_t> DurationSeconds(const std::string& flag, const std::string& text);

// A DNS-1123 subdomain, as Kubernetes wants object (and class and
// namespace) names: lower-case letters, digits, '-' and '.', alphanumeric
// at both ends, at most 253 characters.
bool ValidObjectName(const std::string& name);

// "node-0:0,2" -> {node-0, {0, 2}}.
absl::StatusOr<PinnedGpus> ParsePinnedGpus(const std::string& text);

}  // namespace canhazgpu::cli::k8s
