// The cluster's own gang scheduling, as a server with the GenericWorkload
// feature gate serves it (KEP-4671; scheduling.k8s.io/v1beta1 in 1.37, off
// by default): the PodGroup kind, and the field `spec.schedulingGroup`
// that ties a pod to one. Kubernetes 1.34's documents (openapi/) have
// neither, so with the gate on the store holds the pod field aside while
// it checks the rest against 1.34's Pod schema, and checks the field here:
// an object with a non-empty podGroupName, immutable once the pod exists.
// The PodGroup's schema is ours, written from the 1.37 API reference
// (k8s-openapi v1_37 `scheduling::v1beta1`): the policy (`basic` or
// `gang.minCount`), the fields a controller copies from a Workload, and the
// status. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kube/api_status.h"
#include "kubesim/resource_types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// scheduling.k8s.io/v1beta1 podgroups, with its schema.
ResourceType PodGroupType();

// `spec.schedulingGroup` of a pod, or of a workload's pod template.
struct HeldSchedulingGroup {
  nlohmann::json::json_pointer at;  // where it was
  nlohmann::json value;
};

// Takes the scheduling groups out of `object` (a pod, or a Job, ReplicaSet,
// Deployment or DaemonSet's template), so the 1.34 schema check keeps the
// rest; PutBackSchedulingGroups restores them after.
std::vector<HeldSchedulingGroup> TakeSchedulingGroups(const ResourceType& type,
                                                      nlohmann::json& object);
void PutBackSchedulingGroups(nlohmann::json& object, std::vector<HeldSchedulingGroup> held);

// The rules a 1.37 server applies that the schema walk does not: a
// scheduling group names its PodGroup and never changes on a pod (`old`:
// the stored object on an update); a PodGroup has exactly one policy, a
// gang's minCount is positive, and the policy kind never changes.
std::vector<kube::StatusCause> CheckGenericWorkload(const ResourceType& type,
                                                    const nlohmann::json& object,
                                                    const std::vector<HeldSchedulingGroup>& held,
                                                    const nlohmann::json* old);

}  // namespace canhazgpu::kubesim
