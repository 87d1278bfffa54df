// What a Kubernetes API server checks in resource.k8s.io/v1 objects beyond
// their OpenAPI schema: the documented limits and formats (reference/dra.md
// §2.6) — DNS names, qualified attribute names, 128 devices per slice, one
// node selection, one value per attribute, 32 attributes and capacities per
// device, 32 requests per claim, `exactly` xor `firstAvailable`, 10 KiB CEL
// expressions. The simulated API server rejects with these causes; the node
// driver checks its slices with them before sending, since one bad attribute
// rejects a whole slice. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kube/api_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// The causes (fields as "spec.devices[3].name") for a ResourceSlice's spec.
std::vector<StatusCause> CheckResourceSliceSpec(const nlohmann::json& spec);

// For a claim spec at `base` ("spec" of a ResourceClaim, "spec.spec" of a
// template).
std::vector<StatusCause> CheckDeviceClaimSpec(const std::string& base, const nlohmann::json& spec);

// For a DeviceClass's spec.selectors (or any list of CEL selectors at `field`).
std::vector<StatusCause> CheckSelectors(const std::string& field, const nlohmann::json& selectors);

// A cause for an immutable field that changed, in the server's words.
StatusCause ImmutableField(const std::string& field, const nlohmann::json& value);

}  // namespace canhazgpu::kube
