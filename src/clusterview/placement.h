// Where a pending pod can run, decided as kube-scheduler decides it with the
// DynamicResources plugin (reference/dra.md §4): every claim of the pod must
// exist; a node must pass NodeMismatch(); claims already allocated pin the
// pod to their node; the claims not yet allocated must all fit on the node
// together, from its ResourceSlices, with every device allocated to any
// claim in the cluster left out. Nodes are tried with the fewest pods first.
// When no node fits, the answer says why the way the scheduler's
// PodScheduled condition does ("0/3 nodes are available: ..."), followed by
// the allocator's precise explanation for the node that came closest.
// Pure (reads a View); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "clusterview/view.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

inline constexpr char kPodClaimNameAnnotation[] = "resource.kubernetes.io/pod-claim-name";

// What the scheduler writes into one claim of the pod.
struct ClaimPlan {
  std::string key;  // "ns/name"
  // status.allocation to write; null when the claim was allocated before.
  nlohmann::json allocation;
};

struct Placement {
  std::string node;  // empty: the pod cannot be placed now
  std::vector<ClaimPlan> claims;
  std::string message;  // when it cannot: for PodScheduled and the event
};

// The claim names of the pod's spec.resourceClaims, in order: the
// resourceClaimName, or for a template the name the claim controller
// recorded in status.resourceClaimStatuses ("" when not made yet).
std::vector<std::pair<std::string, std::string>> PodClaimNames(const nlohmann::json& pod);

// Whether `claim` is reserved for the pod with `uid`.
bool ReservedFor(const nlohmann::json& claim, const std::string& uid);

Placement PlacePod(const View& view, const nlohmann::json& pod);

// status.allocation for `allocation` of `claim` (as read from the API):
// results with request, driver, pool, device (adminAccess and the request's
// tolerations where they apply), the class and claim configuration, and a
// nodeSelector naming the node by metadata.name for a node-local pool.
nlohmann::json AllocationJson(const nlohmann::json& claim, const dra::Allocation& allocation,
                              const std::string& node, const View& view);

}  // namespace canhazgpu::clusterview
