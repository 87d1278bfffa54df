// What the API server checks of a pod's scheduling gates (spec.schedulingGates,
// GA since 1.30), beyond the OpenAPI schema: gates may be set when the pod
// is created, and afterwards only removed, never added; a pod created with
// gates cannot name its node (spec.nodeName) until they are gone. The
// simulated API server answers these as 422 Invalid causes, with the real
// server's messages (pkg/apis/core/validation). Pure; thread-safe.
#pragma once

#include <vector>

#include "kube/api_status.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// For a pod being created (`old` null) or updated from `old`.
std::vector<kube::StatusCause> CheckSchedulingGates(const nlohmann::json& pod,
                                                    const nlohmann::json* old);

}  // namespace canhazgpu::kubesim
