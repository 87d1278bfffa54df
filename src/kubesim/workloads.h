// What a 1.34 API server does to workload objects (apps/v1 Deployments,
// ReplicaSets and DaemonSets, batch/v1 Jobs) beyond their schema, so that
// what kubectl applies is stored as a real server stores it and the
// simulated cluster's controllers (simcluster) can rely on it:
//   - defaults on create (replicas 1, the rolling-update strategy, a Job's
//     completions, parallelism, backoffLimit and completionMode, and the
//     selector and labels a Job gets from its own uid);
//   - the rules a user meets first: a selector is required, not empty, and
//     selects the pod template's labels; a Job's pods restart Never or
//     OnFailure; an Indexed Job says how many completions.
// Pure; thread-safe.
#pragma once

#include <vector>

#include "kube/api_status.h"
#include "kubesim/resource_types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// Fills in the defaults of a new object of `type`; metadata.uid must be
// set. Other kinds are left alone.
void DefaultWorkload(const ResourceType& type, nlohmann::json& object);

// The rules above broken by `object` (after defaulting), as 422 causes.
std::vector<kube::StatusCause> CheckWorkload(const ResourceType& type,
                                             const nlohmann::json& object);

}  // namespace canhazgpu::kubesim
