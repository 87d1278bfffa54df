// Internal to clusterview: the steps the simulated scheduler's PlacePod and
// the cluster CLI's explanations share, so both read a pod's claims and try
// a node with the same code - the pod's claims resolved, the devices every
// allocated claim holds (and who holds them), and one node tried with the
// allocator as kube-scheduler's DynamicResources Filter does. Pure
// functions of a View; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "clusterview/placement.h"
#include "clusterview/view.h"
#include "dra/allocator.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview::internal {

inline constexpr char kUserLabel[] = "canhazgpu.dev/user";

bool Allocated(const nlohmann::json& claim);
bool PodDone(const nlohmann::json& pod);

// The node an allocated claim is limited to ("" = any node).
std::string AllocatedNode(const nlohmann::json& claim);

// A device some claim in the cluster has, and who has it.
struct TakenDevice {
  std::string pool;
  std::string device;
  std::string holder;  // "default/train-gpu-x2k9q (pod train)", for messages
  std::string claim;   // "default/train-gpu-x2k9q"
  std::vector<std::string> pods;
  std::string user;  // the first pod's canhazgpu.dev/user label
  // A share of a multi-allocatable device (shareID set): what it consumes.
  // Several claims may then hold one device.
  std::string share_id;
  std::map<std::string, int64_t> consumed;
};

std::vector<TakenDevice> TakenDevices(const View& view);

struct PodClaim {
  std::string key;  // "ns/name"
  nlohmann::json object;
  std::optional<dra::Claim> spec;  // set when it still needs an allocation
};

// The pod's claims, or the message why they cannot be used (yet). With
// `templates`, a claim the claim controller has not made yet is read from
// its ResourceClaimTemplate instead (key "ns/<template> (template)"), so it
// can be explained before it exists.
std::variant<std::vector<PodClaim>, std::string> ResolveClaims(const View& view,
                                                               const nlohmann::json& pod,
                                                               bool templates = false);

// The DeviceClasses the claims still to allocate use, as the allocator's;
// a class that is not there is left out (the allocator names it). The
// error is the line to show.
std::variant<std::vector<dra::DeviceClass>, std::string> ClassesFor(
    const View& view, const std::vector<PodClaim>& claims);

// The pools the allocator may use for `node`: its own and allNodes pools.
std::vector<dra::DevicePool> PoolsOf(const View& view, const std::string& node);

// One node tried for the claims still to allocate, together, with `taken`
// devices (of these pools) marked as their holders'.
struct NodeAttempt {
  bool fits = false;
  std::vector<ClaimPlan> plans;  // when it fits and plans were asked for
  int claims_done = 0;
  std::string claim;     // the claim that did not fit; "" when Create failed
  dra::Explanation why;  // the allocator's, for that claim
  absl::Status status;   // of Create or that claim's Allocate
};

NodeAttempt AttemptNode(const View& view, const std::string& node,
                        const std::vector<PodClaim>& claims,
                        const std::vector<dra::DeviceClass>& classes,
                        std::vector<dra::DevicePool> pools, const std::vector<TakenDevice>& taken,
                        bool plans);

}  // namespace canhazgpu::clusterview::internal
