// GPU id lists as users type them ("1,3") and as tools consume them
// (CUDA_VISIBLE_DEVICES=1,3). Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu {

// Parses "1,3" (spaces around commas allowed). Non-numeric, negative and
// duplicate ids are InvalidArgument errors naming the id. The result keeps
// the user's order.
absl::StatusOr<std::vector<int>> ParseGpuIds(std::string_view text);

// "1,3" from {1, 3}; the order is kept.
std::string JoinGpuIds(const std::vector<int>& ids);

}  // namespace canhazgpu
