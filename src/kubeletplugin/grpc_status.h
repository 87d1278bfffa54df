// The one place where absl::Status and grpc::Status meet: the daemon's
// handlers return grpc::Status, everything else in canhazgpu speaks
// absl::Status. Both use the canonical gRPC codes, so a code maps to itself.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace canhazgpu::kubeletplugin {

grpc::Status ToGrpcStatus(const absl::Status& status);

// `context` names the call ("GetInfo on /run/x.sock") and prefixes the
// message; the result is one line, as our errors are.
absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view context);

}  // namespace canhazgpu::kubeletplugin
