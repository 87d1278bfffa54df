#include "simcluster/scheduler.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "clusterview/gang_placement.h"
#include "clusterview/placement.h"
#include "core/duration.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "simcluster/claim_controller.h"

namespace canhazgpu::simcluster {

using clusterview::ClaimPlan;
using clusterview::KeyOf;
using clusterview::Placement;
using clusterview::PlacePod;
using clusterview::ReservedFor;
using clusterview::VersionOf;
using clusterview::View;
namespace {

using nlohmann::json;

bool Pending(const json& pod, const std::string& scheduler_name) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  if (phase == "Succeeded" || phase == "Failed") return false;
  if (!kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty()) return false;
  if (!kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty()) return false;
  std::string name = kube::StringAt(pod, "/spec/schedulerName"_json_pointer);
  if (name.empty()) name = "default-scheduler";
  return name == scheduler_name;
}

// spec.schedulingGates not empty: the pod waits until whoever set the gates
// removes them (k8shazgpu's gangs, ADR 0019).
bool Gated(const json& pod) {
  const json gates = pod.value("/spec/schedulingGates"_json_pointer, json::array());
  return gates.is_array() && !gates.empty();
}

// The PodGroup `pod` belongs to ("ns/name"), or "".
std::string GroupKeyOf(const json& pod) {
  const std::string name = kube::StringAt(pod, "/spec/schedulingGroup/podGroupName"_json_pointer);
  if (name.empty()) return "";
  return StrCat(kube::StringAt(pod, "/metadata/namespace"_json_pointer), "/", name);
}

bool IsGang(const json& group) {
  return group.contains("/spec/schedulingPolicy/gang"_json_pointer);
}

}  // namespace

Scheduler::Scheduler(kube::Client& client, Overlay& pods, Overlay& claims, const Clock& clock,
                     std::string scheduler_name, std::function<void(const std::string&)> log)
    : client_(client),
      pods_(pods),
      claims_(claims),
      clock_(clock),
      scheduler_name_(std::move(scheduler_name)),
      log_(std::move(log)),
      events_(
          client,
          [&] {
            kube::EventReportingSource source;
            source.component = scheduler_name_;
            return source;
          }(),
          clock) {}

void Scheduler::ScheduleAll(View& view, const PodGroups& pod_groups) {
  // Oldest first, as the scheduling queue orders pods of equal priority.
  std::vector<std::tuple<std::string, std::string, json>> pending;
  for (const auto& [key, pod] : view.pods) {
    if (Pending(pod, scheduler_name_))
      pending.emplace_back(kube::StringAt(pod, "/metadata/creationTimestamp"_json_pointer), key,
                           pod);
  }
  std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::map<std::string, std::vector<std::string>> gangs;  // pod group -> its pending pods
  for (const auto& [created, key, pod] : pending) {
    const std::string group = GroupKeyOf(pod);
    if (Gated(pod)) {
      ReportNotScheduled(view, view.pods.at(key), "SchedulingGated",
                         "Scheduling is blocked due to non-empty scheduling gates");
    } else if (group.empty()) {
      Schedule(view, view.pods.at(key));
    } else if (auto it = pod_groups.find(group); it == pod_groups.end()) {
      continue;  // waits for its PodGroup, as PreEnqueue holds it
    } else if (IsGang(it->second)) {
      gangs[group].push_back(key);
    } else {
      Schedule(view, view.pods.at(key));  // basic: each pod on its own
    }
  }
  for (const auto& [group, keys] : gangs) ScheduleGang(view, pod_groups.at(group), keys);
}

void Scheduler::ScheduleGang(View& view, const json& group, const std::vector<std::string>& keys) {
  const std::string name = kube::StringAt(group, "/metadata/name"_json_pointer);
  const std::string group_key =
      StrCat(kube::StringAt(group, "/metadata/namespace"_json_pointer), "/", name);
  size_t bound = 0;
  for (const auto& [key, pod] : view.pods) {
    const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
    if (GroupKeyOf(pod) == group_key && phase != "Succeeded" && phase != "Failed" &&
        !kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty()) {
      ++bound;
    }
  }
  const int64_t min_count =
      group.value("/spec/schedulingPolicy/gang/minCount"_json_pointer, int64_t{1});
  if (static_cast<int64_t>(bound + keys.size()) < min_count) return;  // waits for its quorum
  std::vector<json> members;
  for (const std::string& key : keys) members.push_back(view.pods.at(key));
  const clusterview::GangPlacement placement = clusterview::PlaceGang(view, members);
  if (!placement.fits) {
    const std::string failed =
        kube::StringAt(members[placement.first_unplaced], "/metadata/name"_json_pointer);
    // PlaceGang's message starts "rank N: ", its words for a run's pods.
    std::string why = placement.message;
    if (size_t colon = why.find(": "); why.starts_with("rank ") && colon != std::string::npos)
      why.erase(0, colon + 2);
    for (const std::string& key : keys) {
      ReportNotScheduled(view, view.pods.at(key), "Unschedulable",
                         StrCat("pod group ", name, ": its ", keys.size(),
                                " pending pods are placed together or not at all, and ", failed,
                                " does not fit: ", why));
    }
    return;
  }
  for (const std::string& key : keys) Schedule(view, view.pods.at(key));
}

void Scheduler::Schedule(View& view, const json& pod_in) {
  const json pod = pod_in;  // the view's copy changes as we write
  Placement placement = PlacePod(view, pod);
  if (placement.node.empty()) {
    ReportNotScheduled(view, pod, "Unschedulable", placement.message);
    return;
  }
  for (const ClaimPlan& plan : placement.claims) {
    if (!Commit(view, pod, plan.key, plan.allocation)) return;
  }
  Bind(view, pod, placement.node);
}

bool Scheduler::Commit(View& view, const json& pod, const std::string& key,
                       const json& allocation) {
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  auto it = view.claims.find(key);
  if (it == view.claims.end()) return false;
  json claim = it->second;
  const std::string ns = kube::StringAt(claim, "/metadata/namespace"_json_pointer);
  auto failed = [&](const absl::Status& status) {
    log_(StrCat("scheduler: pod ", KeyOf(pod), ": claim ", key, ": ", status.message()));
    return false;
  };
  if (!allocation.is_null()) {
    json finalizers = claim.value("/metadata/finalizers"_json_pointer, json::array());
    if (std::find(finalizers.begin(), finalizers.end(), kDeleteProtectionFinalizer) ==
        finalizers.end()) {
      finalizers.push_back(kDeleteProtectionFinalizer);
      claim["metadata"]["finalizers"] = finalizers;
      auto written = client_.Update(kube::kResourceClaims, ns, claim);
      if (!written.ok()) return failed(written.status());
      Wrote(claims_, view.claims, *written);
      claim = *written;
    }
    claim["status"]["allocation"] = allocation;
  }
  if (ReservedFor(claim, uid) && allocation.is_null()) return true;
  if (!ReservedFor(claim, uid)) {
    json& reserved = claim["status"]["reservedFor"];
    if (!reserved.is_array()) reserved = json::array();
    reserved.push_back({{"resource", "pods"},
                        {"name", kube::StringAt(pod, "/metadata/name"_json_pointer)},
                        {"uid", uid}});
  }
  auto written = client_.UpdateStatus(kube::kResourceClaims, ns, claim);
  if (!written.ok()) return failed(written.status());
  Wrote(claims_, view.claims, *written);
  return true;
}

void Scheduler::Bind(View& view, const json& pod, const std::string& node) {
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string name = kube::StringAt(pod, "/metadata/name"_json_pointer);
  // With the uid, a pod deleted and made again under the name is not bound
  // by mistake.
  absl::Status bound =
      client_.BindPod(ns, name, kube::StringAt(pod, "/metadata/uid"_json_pointer), node);
  if (!bound.ok()) {
    log_(StrCat("scheduler: binding pod ", ns, "/", name, " to ", node, ": ", bound.message()));
    return;
  }
  // The binding answers with a Status, not the pod: what it changed is
  // known, and any later version of the pod in the informer includes it.
  json assumed = pod;
  assumed["spec"]["nodeName"] = node;
  const std::string key = KeyOf(pod);
  pods_.Put(key, assumed, VersionOf(pod) + 1);
  view.pods[key] = assumed;
  (void)events_.Record(kube::ReferenceTo(pod), kube::kEventNormal, "Scheduled",
                       StrCat("Successfully assigned ", ns, "/", name, " to ", node));
}

void Scheduler::ReportNotScheduled(View& view, const json& pod, const std::string& reason,
                                   const std::string& message) {
  json conditions = pod.value("/status/conditions"_json_pointer, json::array());
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [](const json& c) { return c.value("type", "") == "PodScheduled"; });
  if (it != conditions.end() && it->value("status", "") == "False" &&
      it->value("reason", "") == reason && it->value("message", "") == message) {
    return;  // said already
  }
  json condition = {
      {"type", "PodScheduled"},   {"status", "False"},
      {"lastProbeTime", nullptr}, {"lastTransitionTime", FormatTimestampSeconds(clock_.Now())},
      {"reason", reason},         {"message", message}};
  if (it != conditions.end() && it->value("status", "") == "False")
    condition["lastTransitionTime"] = it->value("lastTransitionTime", json());
  if (it != conditions.end()) {
    *it = condition;
  } else {
    conditions.push_back(condition);
  }
  json updated = pod;
  updated["status"]["conditions"] = conditions;
  auto written = client_.UpdateStatus(
      kube::kPods, kube::StringAt(pod, "/metadata/namespace"_json_pointer), updated);
  if (!written.ok()) {
    log_(StrCat("scheduler: pod ", KeyOf(pod), ": ", written.status().message()));
    return;
  }
  Wrote(pods_, view.pods, *written);
  if (reason != "Unschedulable") return;  // a gated pod is waiting, not failing
  auto recorded =
      events_.Record(kube::ReferenceTo(pod), kube::kEventWarning, "FailedScheduling", message);
  if (!recorded.ok())
    log_(StrCat("scheduler: event for pod ", KeyOf(pod), ": ", recorded.message()));
}

}  // namespace canhazgpu::simcluster
