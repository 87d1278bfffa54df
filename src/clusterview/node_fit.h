// Whether a pod may go to a node at all, before its claims are looked at:
// the checks of kube-scheduler's NodeUnschedulable, TaintToleration and
// NodeAffinity (spec.nodeSelector and the required node affinity's
// nodeSelectorTerms) plugins, with a node whose Ready
// condition is not True treated as tainted node.kubernetes.io/not-ready, as
// the node lifecycle controller would taint it. Pure; thread-safe.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

inline constexpr char kNotReadyTaint[] = "node.kubernetes.io/not-ready";

// "" when `pod` may run on `node`; otherwise the scheduler's reason, as its
// "0/3 nodes are available" message counts them ("node(s) were
// unschedulable", "node(s) had untolerated taint {key: value}", "node(s)
// didn't match Pod's node affinity/selector").
std::string NodeMismatch(const nlohmann::json& pod, const nlohmann::json& node);

}  // namespace canhazgpu::clusterview
