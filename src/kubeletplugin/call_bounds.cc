#include "kubeletplugin/call_bounds.h"

#include <algorithm>

#include "core/clock.h"
#include "grpc/support/time.h"

namespace canhazgpu::kubeletplugin {

driver::CallBounds BoundsOf(grpc::ServerContext& context, std::chrono::milliseconds cap) {
  // The time left is read on gRPC's monotonic clock (grpc_deadline.h), so a
  // wall-clock jump cannot stretch or cut it, and only the duration crosses
  // over to the steady clock the driver measures with.
  std::chrono::milliseconds left = cap;
  const gpr_timespec deadline = context.raw_deadline();
  if (gpr_time_cmp(deadline, gpr_inf_future(deadline.clock_type)) != 0) {
    const gpr_timespec monotonic = gpr_convert_clock_type(deadline, GPR_CLOCK_MONOTONIC);
    const int64_t ms = gpr_time_to_millis(gpr_time_sub(monotonic, gpr_now(GPR_CLOCK_MONOTONIC)));
    left = std::clamp(std::chrono::milliseconds(ms), std::chrono::milliseconds(0), cap);
  }
  // The driver stops a little early, so that the answer, with its claims'
  // errors, reaches the kubelet before it gives up and shows only a timeout.
  left -= std::min<std::chrono::milliseconds>(kAnswerMargin, left / 10);
  // gRPC's deadline is real time, so the driver's is on the real clock.
  return {.deadline = RealClock().MonoNow() + left,
          .cancelled = [&context] { return context.IsCancelled(); }};
}

}  // namespace canhazgpu::kubeletplugin
