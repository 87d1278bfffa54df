// `k8shazgpu vllm run`: vLLM's defaults on top of `run` (its server image,
// port 8000, a memory-backed /dev/shm), and, from a vLLM checkout, the
// developer's changes: packaged here (src/changeset), carried in
// ConfigMaps, applied in the pod on the merge-base from the node's git
// mirror (vllm_pod.h). Before the pod exists the run makes sure the node
// caches hold what it needs (vllm_caches.h): the merge-base image, the
// repository and the served model join the CachePlan when missing, the
// progress shows while they warm, and the pod may run only on nodes where
// they are all Ready. Runs on the command's thread.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "cli/k8shazgpu/context.h"

namespace canhazgpu::cli::k8s {

inline constexpr char kDefaultVllmImage[] = "vllm/vllm-openai:latest";
inline constexpr int kVllmPort = 8000;

// `run`'s flags and --fetch, --rebuild, --no-checkout.
std::vector<FlagSpec> VllmRunFlags();

// The container's exit code, as Run().
absl::StatusOr<int> VllmRun(Context& ctx, const ParsedFlags& flags);

}  // namespace canhazgpu::cli::k8s
