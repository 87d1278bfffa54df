// kube-scheduler's InterPodAffinity filter, for required pod anti-affinity
// (what k8shazgpu's multi-node runs use to put each rank on its own node,
// ADR 0019): a node is out for `pod` when a pod that is bound and not done,
// in the node's topology domain (the nodes with the same value of the
// term's topologyKey label), matches one of `pod`'s required anti-affinity
// terms — or when such a pod's own terms match `pod`. A term selects pods
// in the pod's namespace, or in its `namespaces` list; namespaceSelector is
// not read. A node without the topology label is not in any domain. Pure
// (reads a View); thread-safe.
#pragma once

#include <string>

#include "clusterview/view.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

inline constexpr char kAntiAffinityMismatch[] = "node(s) didn't match pod anti-affinity rules";
inline constexpr char kExistingAntiAffinityMismatch[] =
    "node(s) didn't satisfy existing pods anti-affinity rules";

// "" when anti-affinity lets `pod` go to `node`; otherwise the scheduler's
// reason, as its "0/3 nodes are available" message counts it.
std::string PodAntiAffinityMismatch(const View& view, const nlohmann::json& pod,
                                    const std::string& node);

}  // namespace canhazgpu::clusterview
