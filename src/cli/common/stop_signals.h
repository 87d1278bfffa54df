// The foreground servers (k8shazgpu-node, k8shazgpu-sim) stop on SIGTERM or
// SIGINT, taken by sigwait on one thread: they must be blocked before any
// other thread starts, so that no thread is killed by them. SIGPIPE is
// ignored (a client that went away must not kill a server).
#pragma once

#include <signal.h>

namespace canhazgpu::cli {

// Blocks SIGTERM and SIGINT in the calling thread (threads started later
// inherit that) and ignores SIGPIPE; returns the set for sigwait.
sigset_t BlockStopSignals();

}  // namespace canhazgpu::cli
