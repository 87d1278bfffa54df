// The flags `reserve` and `run` share: how many GPUs or which, --note,
// --nonblock, --wait. Validated before anything changes (canhazgpu's rules, §1.3).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"
#include "cli/common/flags.h"

namespace canhazgpu::cli {

std::vector<FlagSpec> RequestFlags();

// -g N and -G ids together are accepted when N equals the number of ids
// (or is 1, canhazgpu's default); otherwise InvalidArgument.
absl::StatusOr<alloc::ReserveRequest> ParseRequestFlags(const ParsedFlags& flags);

}  // namespace canhazgpu::cli
