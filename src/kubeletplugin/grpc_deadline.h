// Deadlines for gRPC calls and shutdowns, measured on gRPC's own monotonic
// clock: a wall-clock jump cannot stretch or cut a kubelet timeout, and the
// daemon never reads the system clock itself (scripts/test.sh keeps that in
// host/).
#pragma once

#include <chrono>

#include "grpc/support/time.h"

namespace canhazgpu::kubeletplugin {

inline gpr_timespec DeadlineAfter(std::chrono::milliseconds timeout) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_millis(timeout.count(), GPR_TIMESPAN));
}

}  // namespace canhazgpu::kubeletplugin
