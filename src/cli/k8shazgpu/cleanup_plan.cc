#include "cli/k8shazgpu/cleanup_plan.h"

#include <set>

#include "cli/k8shazgpu/run_objects.h"
#include "core/status_macros.h"
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

// The name of the Job that controls `pod`, or "".
std::string ControllingJob(const json& pod) {
  for (const json& ref : pod.value("/metadata/ownerReferences"_json_pointer, json::array())) {
    if (ref.value("kind", "") == "Job" && ref.value("controller", false))
      return ref.value("name", "");
  }
  return "";
}

// Whether the scope takes the run whose pod (or Job) is `o`: not when
// --name names another, nor another user's without all_users (skipped by
// --all and said; PermissionDenied when named).
absl::StatusOr<bool> Takes(const json& o, const CleanupScope& scope, CleanupPlan& plan) {
  const bool named = scope.name && Name(o) == *scope.name;
  if (scope.name && !named) return false;
  if (scope.all_users || Label(o, kUserLabel) == scope.me) return true;
  if (named) {
    return absl::PermissionDeniedError(StrCat("run '", Name(o), "' is ", Label(o, kUserLabel),
                                              "'s, not yours (", scope.me,
                                              "); add --all-users to delete it anyway"));
  }
  plan.others_skipped.push_back(Name(o));
  return false;
}

// A `reserve` pod that has not ended: someone may be using what it holds.
bool HoldingReservation(const json& pod) {
  if (Label(pod, kKindLabel) != kReservationKind) return false;
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  return phase != "Succeeded" && phase != "Failed";
}

// The runs the scope takes, by their pods and by multi-node runs' Jobs.
struct ChosenRuns {
  std::set<std::string> live_runs;    // run ids that have a pod (or a job)
  std::set<std::string> chosen_runs;  // ... that we delete
  std::set<std::string> live_pods;    // pod names that stay
  std::set<std::string> chosen_jobs;
  std::vector<CleanupTarget> targets;  // the chosen pods and Jobs
};

absl::StatusOr<ChosenRuns> ChooseRuns(const std::vector<json>& pods, const std::vector<json>& jobs,
                                      const CleanupScope& scope, CleanupPlan& plan) {
  ChosenRuns c;
  // A multi-node run is its Job: deleting the Job deletes its ranks (a
  // rank deleted alone would be made again by the Job).
  for (const json& job : jobs) {
    c.live_runs.insert(Label(job, kRunLabel));
    ASSIGN_OR_RETURN(bool take, Takes(job, scope, plan));
    if (!take) continue;
    c.chosen_runs.insert(Label(job, kRunLabel));
    c.chosen_jobs.insert(Name(job));
    c.targets.push_back({kube::kJobs, "job", Name(job)});
  }
  for (const json& pod : pods) {
    c.live_runs.insert(Label(pod, kRunLabel));
    if (const std::string job = ControllingJob(pod); !job.empty()) {
      if (!c.chosen_jobs.contains(job)) c.live_pods.insert(Name(pod));
      continue;
    }
    ASSIGN_OR_RETURN(bool take, Takes(pod, scope, plan));
    if (take && !scope.name && !scope.include_reservations && HoldingReservation(pod)) {
      plan.reservations_skipped.push_back(Name(pod));
      take = false;
    }
    if (!take) {
      c.live_pods.insert(Name(pod));
      continue;
    }
    c.chosen_runs.insert(Label(pod, kRunLabel));
    c.targets.push_back({kube::kPods, "pod", Name(pod)});
  }
  return c;
}

}  // namespace

absl::StatusOr<CleanupPlan> PlanCleanup(const std::vector<json>& pods,
                                        const std::vector<json>& templates,
                                        const std::vector<json>& claims, const CleanupScope& scope,
                                        const std::vector<json>& config_maps,
                                        const std::vector<json>& jobs,
                                        const std::vector<json>& services) {
  CleanupPlan plan;
  auto mine = [&](const json& o) { return scope.all_users || Label(o, kUserLabel) == scope.me; };
  ASSIGN_OR_RETURN(ChosenRuns chosen, ChooseRuns(pods, jobs, scope, plan));
  const std::set<std::string>& live_runs = chosen.live_runs;
  const std::set<std::string>& chosen_runs = chosen.chosen_runs;
  const std::set<std::string>& live_pods = chosen.live_pods;
  const std::vector<CleanupTarget>& chosen_pods = chosen.targets;
  // A leftover (no pod of its run) belongs to --name NAME when run would
  // have named it so: "<pod>-gpus-<id>" for a template and its claims,
  // "<pod>-changes-<i>" for a ConfigMap.
  auto leftover_in_scope = [&](const json& o, const std::string& infix = "-gpus-") {
    if (live_runs.contains(Label(o, kRunLabel)) || !mine(o)) return false;
    return !scope.name || Name(o).starts_with(*scope.name + infix);
  };
  struct Leftovers {
    const std::vector<json>* objects;
    kube::ResourceRef ref;
    const char* kind;
    const char* infix;  // "": named exactly as the run (a Service)
  };
  for (const Leftovers& l :
       {Leftovers{&templates, kube::kResourceClaimTemplates, "resourceclaimtemplate", "-gpus-"},
        Leftovers{&config_maps, kube::kConfigMaps, "configmap", "-changes-"},
        Leftovers{&services, kube::kServices, "service", ""}}) {
    for (const json& o : *l.objects) {
      const bool exact = *l.infix != '\0' || !scope.name || Name(o) == *scope.name;
      if (chosen_runs.contains(Label(o, kRunLabel)) || (leftover_in_scope(o, l.infix) && exact))
        plan.targets.push_back({l.ref, l.kind, Name(o)});
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
