// `k8shazgpu run`'s body, shared with `vllm run`: from a parsed request to
// the container's exit code - class discovery, the claim check, the
// objects in cleanup-safe order, the wait in line with its reason, the
// logs, and Ctrl-C (detach or delete). Runs on the command's thread.
#pragma once

#include "absl/status/statusor.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_hooks.h"
#include "cli/k8shazgpu/run_request.h"

namespace canhazgpu::cli::k8s {

// The image of `run` when neither --image, K8SHAZGPU_IMAGE nor the
// cluster's defaults (cluster_defaults.h) name one: small, with a shell and
// the Python people type (`python train.py`); CUDA comes from the driver.
inline constexpr char kDefaultRunImage[] = "python:3.12-slim";

// The process exit code: the container's, 0 after --detach, 128+N after
// signal N deleted the run; errors before the pod exists are statuses.
absl::StatusOr<int> Run(Context& ctx, const RunRequest& request, const RunHooks& hooks);

// `-n NS pod/NAME` lines: how to follow, reach and clean up a run.
std::string FollowHints(const Context& ctx, const std::string& pod, const RunRequest& request);

}  // namespace canhazgpu::cli::k8s
