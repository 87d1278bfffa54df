#include "cli/k8shazgpu/cleanup_plan.h"

#include <set>

#include "cli/k8shazgpu/run_objects.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

std::string Name(const json& o) { return o.value("/metadata/name"_json_pointer, std::string()); }
std::string Label(const json& o, const char* key) {
  return o.value("/metadata/labels"_json_pointer, json::object()).value(key, "");
}
// The pods that own `o`, by name.
std::vector<std::string> PodOwners(const json& o) {
  std::vector<std::string> out;
  for (const json& ref : o.value("/metadata/ownerReferences"_json_pointer, json::array())) {
    if (ref.value("kind", "") == "Pod") out.push_back(ref.value("name", ""));
  }
  return out;
}

// Whether a pod that stays owns the claim (it is still used), and whether
// a pod being deleted does.
std::pair<bool, bool> ClaimOwnership(const json& claim, const std::set<std::string>& live_pods) {
  bool still_used = false;
  bool owned_by_chosen = false;
  for (const std::string& owner : PodOwners(claim)) {
    if (live_pods.contains(owner)) {
      still_used = true;
    } else {
      owned_by_chosen = true;
    }
  }
  return {still_used, owned_by_chosen};
}

// A `reserve` pod that has not ended: someone may be using what it holds.
bool HoldingReservation(const json& pod) {
  if (Label(pod, kKindLabel) != kReservationKind) return false;
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  return phase != "Succeeded" && phase != "Failed";
}

}  // namespace

absl::StatusOr<CleanupPlan> PlanCleanup(const std::vector<json>& pods,
                                        const std::vector<json>& templates,
                                        const std::vector<json>& claims, const CleanupScope& scope,
                                        const std::vector<json>& config_maps) {
  CleanupPlan plan;
  auto mine = [&](const json& o) { return scope.all_users || Label(o, kUserLabel) == scope.me; };
  std::set<std::string> live_runs;    // run ids that have a pod
  std::set<std::string> chosen_runs;  // ... that we delete
  std::set<std::string> live_pods;    // pod names that stay
  std::vector<CleanupTarget> chosen_pods;
  for (const json& pod : pods) {
    const std::string run = Label(pod, kRunLabel);
    live_runs.insert(run);
    const bool named = scope.name && Name(pod) == *scope.name;
    if (scope.name && !named) {
      live_pods.insert(Name(pod));
      continue;
    }
    if (!mine(pod)) {
      if (named) {
        return absl::PermissionDeniedError(
            StrCat("run '", Name(pod), "' is ", Label(pod, kUserLabel), "'s, not yours (", scope.me,
                   "); add --all-users to delete it anyway"));
      }
      plan.others_skipped.push_back(Name(pod));
      live_pods.insert(Name(pod));
      continue;
    }
    if (!scope.name && !scope.include_reservations && HoldingReservation(pod)) {
      plan.reservations_skipped.push_back(Name(pod));
      live_pods.insert(Name(pod));
      continue;
    }
    chosen_runs.insert(run);
    chosen_pods.push_back({kube::kPods, "pod", Name(pod)});
  }
  // A leftover (no pod of its run) belongs to --name NAME when run would
  // have named it so: "<pod>-gpus-<id>" for a template and its claims,
  // "<pod>-changes-<i>" for a ConfigMap.
  auto leftover_in_scope = [&](const json& o, const std::string& infix = "-gpus-") {
    if (live_runs.contains(Label(o, kRunLabel)) || !mine(o)) return false;
    return !scope.name || Name(o).starts_with(*scope.name + infix);
  };
  for (const json& t : templates) {
    if (chosen_runs.contains(Label(t, kRunLabel)) || leftover_in_scope(t)) {
      plan.targets.push_back({kube::kResourceClaimTemplates, "resourceclaimtemplate", Name(t)});
    }
  }
  for (const json& m : config_maps) {
    if (chosen_runs.contains(Label(m, kRunLabel)) || leftover_in_scope(m, "-changes-")) {
      plan.targets.push_back({kube::kConfigMaps, "configmap", Name(m)});
    }
  }
  plan.targets.insert(plan.targets.end(), chosen_pods.begin(), chosen_pods.end());
  for (const json& c : claims) {
    const auto [still_used, owned_by_chosen] = ClaimOwnership(c, live_pods);
    if (still_used) continue;  // a shared claim goes with its last pod
    // A claim of a deleted pod goes with it (the garbage collector); one
    // no pod owns is a leftover: of a run that never made its pod, or a
    // shared claim whose first run stopped before adopting it.
    if (owned_by_chosen) continue;
    // A shared claim is named by its share, not its run: only --all takes it.
    const bool shared = !Label(c, kShareLabel).empty();
    const bool leftover = shared
                              ? !scope.name && !live_runs.contains(Label(c, kRunLabel)) && mine(c)
                              : leftover_in_scope(c);
    if (leftover) {
      plan.targets.push_back({kube::kResourceClaims, "resourceclaim", Name(c)});
    }
  }
  if (scope.name && plan.targets.empty()) {
    return absl::NotFoundError(StrCat("no run named '", *scope.name,
                                      "' (a pod, or a template of its run, with the ", kRunLabel,
                                      " label) in this namespace"));
  }
  return plan;
}

}  // namespace canhazgpu::cli::k8s
