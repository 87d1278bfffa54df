#include "kubeletplugin/grpc_status.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "core/strings.h"

namespace canhazgpu::kubeletplugin {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) {
    return grpc::Status::OK;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view context) {
  if (status.ok()) {
    return absl::OkStatus();
  }
  // gRPC's transport errors can span lines (a connect failure lists every
  // address tried); our callers print one line per error.
  std::string message = status.error_message();
  std::replace(message.begin(), message.end(), '\n', ' ');
  absl::StripAsciiWhitespace(&message);
  if (message.empty()) {
    message = absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      StrCat(context, ": ", message));
}

}  // namespace canhazgpu::kubeletplugin
