// Reading a small file someone else may control (a kubeconfig, a token, a
// certificate): only a regular file, never more than a bound, and a FIFO or
// device never blocks the caller. Thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu {

// The contents of `path`, at most `max_bytes`. NotFound when it does not
// exist; InvalidArgument "WHAT PATH: not a regular file" or "...: larger than
// N bytes"; PermissionDenied or Internal with the system's reason otherwise.
// `what` names the file in messages ("kubeconfig", "token file").
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                            const std::string& what);

}  // namespace canhazgpu
