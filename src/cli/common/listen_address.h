// HOST:PORT as a server's listen flag takes it (--listen, --http-listen):
// "127.0.0.1:8081", "localhost:0" (0: any free port), "[::1]:8080". Pure.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu::cli {

struct ListenAddress {
  std::string host;  // without IPv6 brackets
  int port = 0;
};

// InvalidArgument "expected HOST:PORT, got '...'" for anything else.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text);

}  // namespace canhazgpu::cli
