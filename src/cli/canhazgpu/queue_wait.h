// How `reserve` and `run` wait in the queue: --nonblock / --wait, progress on
// stderr (redrawn in place on a terminal, a line per change otherwise, never
// on stdout, which `--short` keeps for the ids), and SIGINT / SIGTERM / SIGHUP
// ending the wait (the entry and its partial holds leave the queue).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "alloc/queue.h"
#include "cli/canhazgpu/context.h"
#include "cli/common/flags.h"

namespace canhazgpu::cli {

// Reserves `request` for ctx.caller, queueing as the flags say. A wait ended
// by a signal returns Cancelled; the caller exits 128 + the signal
// (SignalExitCode()).
// `gpus` is the provider's answer the command already has: the first look
// at the GPUs uses it rather than asking the provider again.
absl::StatusOr<std::vector<int>> AcquireWithQueue(Context& ctx, store::StateStore& store,
                                                  const PoolConfig& pool,
                                                  const alloc::ReserveRequest& request,
                                                  const ParsedFlags& flags,
                                                  std::vector<GpuInfo> gpus);

// 128 + the signal that ended the last wait (130 for SIGINT), or 1.
int SignalExitCode();

}  // namespace canhazgpu::cli
