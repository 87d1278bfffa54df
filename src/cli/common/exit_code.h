// The process exit codes of every canhazgpu command (PRODUCT.md), and the one
// place where a status becomes an exit code.
#pragma once

#include "absl/status/status.h"

namespace canhazgpu::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitRuntime = 1,      // something went wrong while doing it
  kExitUsage = 2,        // bad flag or value; nothing changed
  kExitUnavailable = 3,  // GPUs not available now
  kExitTimedOut = 124,   // `run --timeout` stopped the job (as timeout(1) exits)
};

// InvalidArgument -> usage, ResourceExhausted -> unavailable, else runtime.
inline ExitCode ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (absl::IsInvalidArgument(status)) return kExitUsage;
  if (absl::IsResourceExhausted(status)) return kExitUnavailable;
  return kExitRuntime;
}

}  // namespace canhazgpu::cli
