// What the API server checks in a ResourceClaim's status.devices (the
// drivers' AllocatedDeviceStatus entries, KEP-4817) beyond their OpenAPI
// schema, as validateDeviceStatus and metav1's ValidateConditions do: each
// entry names an allocated device of the claim (driver, pool, device and,
// for a share, its shareID), no key twice, at most 8 conditions, each with
// a status of True, False or Unknown and a type and reason that are not
// empty (that they are there, and lastTransitionTime, the schema checks),
// and `data` a JSON object of at most 10 KiB. The
// simulated API server answers these as 422 Invalid causes. Pure; thread-safe.
#pragma once

#include <vector>

#include "kube/api_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

std::vector<kube::StatusCause> CheckDeviceStatuses(const nlohmann::json& status);

}  // namespace canhazgpu::kubesim
