#include "clusterview/gang_placement.h"

#include "clusterview/placement.h"
#include "core/strings.h"

namespace canhazgpu::clusterview {

using nlohmann::json;

GangPlacement PlaceGang(const View& view, const std::vector<json>& ranks) {
  GangPlacement out;
  View assumed = view;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    json pod = ranks[rank];
    Placement placement = PlacePod(assumed, pod);
    if (placement.node.empty()) {
      out.first_unplaced = static_cast<int>(rank);
      out.message = StrCat("rank ", rank, ": ", placement.message);
      return out;
    }
    // As the scheduler's cache assumes a pod before it is bound: the next
    // rank sees this one's node and devices taken.
    for (const ClaimPlan& plan : placement.claims) {
      auto claim = assumed.claims.find(plan.key);
      if (claim != assumed.claims.end() && !plan.allocation.is_null())
        claim->second["status"]["allocation"] = plan.allocation;
    }
    pod["spec"]["nodeName"] = placement.node;
    assumed.pods[KeyOf(pod)] = pod;
    out.nodes.push_back(placement.node);
  }
  out.fits = true;
  return out;
}

GangPlacement PlaceNewGang(const View& view, const json& rank_pod, const json& claim_spec,
                           const std::string& ns, int n, bool idle) {
  View planned = view;
  if (idle) {
    planned.pods.clear();
    for (auto& [key, claim] : planned.claims) {
      if (claim.contains("status")) claim.erase("status");
    }
    planned.node_gpu_statuses.clear();
  }
  std::vector<json> ranks;
  for (int i = 0; i < n; ++i) {
    const std::string name = StrCat("planned-rank-", i);
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"namespace", ns}, {"name", name}, {"uid", name}}},
                  {"spec", claim_spec}};
    planned.claims[StrCat(ns, "/", name)] = claim;
    json pod = rank_pod;
    pod["metadata"]["namespace"] = ns;
    pod["metadata"]["name"] = name;
    pod["metadata"]["uid"] = StrCat("uid-", name);
    json entry = {{"name", "gpus"}, {"resourceClaimName", name}};
    const json entries = pod.value("/spec/resourceClaims"_json_pointer, json::array());
    if (entries.is_array() && !entries.empty() && entries[0].contains("name"))
      entry["name"] = entries[0]["name"];
    pod["spec"]["resourceClaims"] = json::array({entry});
    pod["spec"].erase("schedulingGates");
    ranks.push_back(std::move(pod));
  }
  return PlaceGang(planned, ranks);
}

}  // namespace canhazgpu::clusterview
