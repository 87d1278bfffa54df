// The bounds of one of the kubelet's calls (driver::CallBounds) from its gRPC
// context: the call's deadline, never later than kMaxCallTime from its
// start and less a margin for the answer's way back (kAnswerMargin, or a
// tenth of a short deadline), and whether the kubelet cancelled it. The kubelet stops waiting
// for NodePrepareResources and NodeUnprepareResources after 45 s, so work
// past that only keeps the API server and the preparer's lock busy for an
// answer nobody reads. Stateless; the bounds refer to `context` and are
// valid while the call is.
#pragma once

#include <chrono>

#include "driver/node_service.h"
#include "grpcpp/server_context.h"

namespace canhazgpu::kubeletplugin {

// The kubelet's own timeout for a DRA call; also the bound of a call that
// came without a deadline.
inline constexpr std::chrono::seconds kMaxCallTime{45};
inline constexpr std::chrono::seconds kAnswerMargin{1};

driver::CallBounds BoundsOf(grpc::ServerContext& context,
                            std::chrono::milliseconds cap = kMaxCallTime);

}  // namespace canhazgpu::kubeletplugin
