// `k8shazgpu run --nodes N --gpus-per-node G`'s body (ADR 0019): the
// objects (gang_objects.h), the admission of all N ranks at once - Kueue's
// with --queue, otherwise our own through scheduling gates, never holding
// part of a gang while it waits - then every rank's output, prefixed
// "[rank] ", and the run's end: 0 when every rank succeeded, else the first
// failing rank's exit code with which rank and why. Ctrl-C deletes every
// rank. Runs on the command's thread (the log copies on their own).
#pragma once

#include "absl/status/statusor.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_hooks.h"
#include "cli/k8shazgpu/run_request.h"

namespace canhazgpu::cli::k8s {

// How long our own admission waits, after it released the gates, for the
// scheduler to bind every rank before it gives everything back and tries
// again in line (another user's pods may have taken a node meanwhile).
inline constexpr int kGangBindSeconds = 30;

absl::StatusOr<int> RunGang(Context& ctx, const RunRequest& request, const RunHooks& hooks);

}  // namespace canhazgpu::cli::k8s
