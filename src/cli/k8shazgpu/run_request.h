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
  dra::DeviceWants wants;    // --where, --min-memory, --product, --mig
  std::string device_class;  // --class; empty: discovered
  std::string share;         // --share: a named claim several runs use
  // --share-with: who else may join a shared claim this run creates (user
  // label values, or "*" for anyone); its creator always may.
  std::vector<std::string> share_with;
  std::string node;  // --node (or the -G node)
  std::string image;
  std::string name;                                      // --name; empty: generated
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V, in order
  std::optional<int> port;
  std::optional<int64_t> timeout_seconds;  // --timeout -> activeDeadlineSeconds
  bool detach = false;
  std::vector<std::string> argv;  // after `--`, exactly as given
  bool shared_memory = false;     // an emptyDir of medium Memory at /dev/shm (vllm)
  // `reserve`: a placeholder pod, labelled a reservation; Run() returns once
  // it runs (printing where and what it holds), and deletes what it made
  // when it does not run within `wait_seconds` or is interrupted before.
  bool reservation = false;
  std::optional<int64_t> wait_seconds;
};

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

// The pod itself: --image, --name.
std::vector<FlagSpec> PodFlags();

// The flags of `run`: placement, --share, the pod, the command's
// environment and lifecycle, without the global ones; `vllm run` takes the
// same.
std::vector<FlagSpec> RunFlags();

// The request the flags describe. InvalidArgument, one line, for a bad
// value or conflicting flags (--gpus with -G, --mig with -G, --node with
// another -G node, a missing command, an --env without '=', a --where that
// does not compile: with its position).
absl::StatusOr<RunRequest> ParseRunRequest(const ParsedFlags& flags, const RunDefaults& defaults);

// "node-0:0,2" -> {node-0, {0, 2}}.
absl::StatusOr<PinnedGpus> ParsePinnedGpus(const std::string& text);

}  // namespace canhazgpu::cli::k8s
