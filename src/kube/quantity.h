// Kubernetes resource quantities ("40Gi", "500m", "1e3"), which typed objects
// keep as the strings the server sent. ParseQuantity reads one as a number,
// for code that compares or adds capacities. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::kube {

// The value of a quantity, rounded up (away from zero) to an integer as
// resource.Quantity.Value() does: "40Gi" -> 42949672960, "1.5k" -> 1500,
// "500m" -> 1, "1e3" -> 1000. Accepts the grammar of k8s.io/apimachinery
// resource.Quantity: an optional sign, digits with an optional fraction, then
// a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal one (m k M G T P E, or none)
// or a decimal exponent (e3, E-2). InvalidArgument, in one line naming the
// text, for anything else, for more than 19 significant digits, and for a
// value beyond int64.
absl::StatusOr<int64_t> ParseQuantity(std::string_view text);

}  // namespace canhazgpu::kube
