// The CEL selectors of DeviceClasses, ResourceClaims and
// ResourceClaimTemplates compiled when the object is written, as a 1.34 API
// server compiles them: a selector that does not compile in the DRA
// selector environment (`memory >= quantity("40Gi")`, a `#` comment) is
// refused then, with the server's message shape, instead of being stored to
// fail at scheduling. Pure.
#pragma once

#include <vector>

#include "kube/api_status.h"
#include "kubesim/resource_types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// One FieldValueInvalid cause per selector of `object` that does not
// compile. On an update (`old` set) an expression `old` already has is not
// compiled again: what the server stored stays writable.
std::vector<kube::StatusCause> CheckCelSelectors(const ResourceType& type,
                                                 const nlohmann::json& object,
                                                 const nlohmann::json* old);

}  // namespace canhazgpu::kubesim
