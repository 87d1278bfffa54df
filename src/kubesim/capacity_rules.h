// What the API server checks in the consumable-capacity fields of
// resource.k8s.io/v1 (KEP-5075, reference sharing-and-multinode.md §1.1),
// beyond their OpenAPI schema: a requestPolicy only on a device with
// allowMultipleAllocations; validValues xor validRange; at most 10 valid
// values, ascending and unique, including the default; validRange.min
// required, min <= default <= max <= value, max and default multiples of
// step, min + step <= value; capacity.requests and consumedCapacity
// quantities not negative; shareID in the k8s-uuid form. The simulated API
// server answers these as 422 Invalid causes. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kube/api_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// For a ResourceSlice's spec.
std::vector<kube::StatusCause> CheckSliceCapacity(const nlohmann::json& spec);

// For a claim spec at `base` ("spec", or "spec.spec" of a template).
std::vector<kube::StatusCause> CheckCapacityRequests(const std::string& base,
                                                     const nlohmann::json& spec);

// For a ResourceClaim's status: shareIDs and consumedCapacity.
std::vector<kube::StatusCause> CheckClaimShares(const nlohmann::json& status);

}  // namespace canhazgpu::kubesim
