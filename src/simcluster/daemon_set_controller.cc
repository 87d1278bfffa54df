#include "simcluster/daemon_set_controller.h"

#include <map>

#include "clusterview/node_fit.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simcluster {

using clusterview::View;
using nlohmann::json;

namespace {

constexpr char kRevisionHashLabel[] = "controller-revision-hash";

// The tolerations the controller adds to every daemon pod
// (AddOrUpdateDaemonPodTolerations), so that node conditions do not evict
// or keep out a node's daemons.
void AddDaemonTolerations(json& spec) {
  json& tolerations = spec["tolerations"];
  if (!tolerations.is_array()) tolerations = json::array();
  const std::pair<const char*, const char*> kAdded[] = {
      {"node.kubernetes.io/not-ready", "NoExecute"},
      {"node.kubernetes.io/unreachable", "NoExecute"},
      {"node.kubernetes.io/disk-pressure", "NoSchedule"},
      {"node.kubernetes.io/memory-pressure", "NoSchedule"},
      {"node.kubernetes.io/pid-pressure", "NoSchedule"},
      {"node.kubernetes.io/unschedulable", "NoSchedule"},
  };
  for (const auto& [key, effect] : kAdded) {
    bool present = false;
    for (const json& t : tolerations)
      present = present ||
                (kube::StringField(t, "key") == key && kube::StringField(t, "effect") == effect);
    if (!present) tolerations.push_back({{"key", key}, {"operator", "Exists"}, {"effect", effect}});
  }
}

// Pins the pod to `node`, replacing any required node affinity (the
// template's was already checked against the node).
void PinToNode(json& spec, const std::string& node) {
  spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms",
       {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}}}}};
}

}  // namespace

std::string DaemonPodNode(const json& pod) {
  const std::string bound = kube::StringAt(pod, "/spec/nodeName"_json_pointer);
  if (!bound.empty()) return bound;
  const json terms = pod.value(
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"_json_pointer,
      json::array());
  for (const json& term : terms) {
    for (const json& field : term.value("matchFields", json::array())) {
      const json values = field.value("values", json::array());
      if (kube::StringField(field, "key") == "metadata.name" && values.size() == 1 &&
          values[0].is_string()) {
        return values[0].get<std::string>();
      }
    }
  }
  return "";
}

void DaemonSetController::Sync(View& view, const KindInPass& daemon_sets) {
  std::vector<json> all;
  for (const auto& [key, ds] : *daemon_sets.objects) all.push_back(ds);
  for (const json& ds : all) SyncOne(view, daemon_sets, ds);
}

void DaemonSetController::SyncOne(View& view, const KindInPass& daemon_sets, const json& ds) {
  if (!kube::StringAt(ds, "/metadata/deletionTimestamp"_json_pointer).empty()) return;
  const json spec = ds.value("spec", json::object());
  json pod_template = spec.value("template", json::object());
  const std::string hash = TemplateHash(pod_template);
  const int64_t generation = IntAt(ds, "/metadata/generation"_json_pointer, 1);
  pod_template["metadata"]["labels"][kRevisionHashLabel] = hash;
  pod_template["metadata"]["labels"]["pod-template-generation"] = std::to_string(generation);
  AddDaemonTolerations(pod_template["spec"]);
  const int64_t min_ready = IntAt(spec, "/minReadySeconds"_json_pointer, 0);
  const TimePoint now = writer_.clock().Now();
  const bool rolling =
      spec.value("/updateStrategy/type"_json_pointer, json("RollingUpdate")) == "RollingUpdate";

  std::map<std::string, std::vector<json>> by_node;
  for (const json& pod : Controlled(view.pods, ds))
    if (PodActive(pod) && !writer_.Deleting(pod)) by_node[DaemonPodNode(pod)].push_back(pod);

  int64_t desired = 0, current = 0, misscheduled = 0, ready = 0, available = 0, updated = 0;
  std::vector<json> outdated;
  const std::string name = kube::StringAt(ds, "/metadata/name"_json_pointer);
  for (const auto& [node_name, node] : view.nodes) {
    // The template's own affinity decides; the pin only binds the pod.
    const bool should_run = clusterview::NodeMismatch(pod_template, node).empty();
    std::vector<json>& pods = by_node[node_name];
    if (!should_run) {
      if (!pods.empty()) ++misscheduled;
      for (const json& pod : pods) writer_.DeletePod(pod);
      continue;
    }
    ++desired;
    if (pods.empty()) {
      json pinned = pod_template;
      PinToNode(pinned["spec"], node_name);
      writer_.CreatePod(view, ds, "apps/v1", "DaemonSet", pinned, name + "-");
      continue;
    }
    ++current;
    // One daemon per node: extra ones (a race, a template change) go.
    for (size_t i = 1; i < pods.size(); ++i) writer_.DeletePod(pods[i]);
    const json& pod = pods[0];
    ready += PodReady(pod) ? 1 : 0;
    available += PodAvailable(pod, min_ready, now) ? 1 : 0;
    if (kube::StringAt(pod, "/metadata/labels/controller-revision-hash"_json_pointer) == hash) {
      ++updated;
    } else {
      outdated.push_back(pod);
    }
  }
  if (rolling) {
    const json rolling_update = spec.value("/updateStrategy/rollingUpdate"_json_pointer, json());
    int64_t budget = ScaledValue(
        rolling_update.is_object() ? rolling_update.value("maxUnavailable", json(1)) : json(1),
        desired, true);
    if (budget < 1) budget = 1;
    budget -= desired - available;
    // Old pods that are not available anyway go first: they cost nothing.
    for (const json& pod : outdated) {
      if (!PodAvailable(pod, min_ready, now)) {
        writer_.DeletePod(pod);
      } else if (budget > 0) {
        writer_.DeletePod(pod);
        --budget;
      }
    }
  }
  json status = ds.value("status", json::object());
  status["desiredNumberScheduled"] = desired;
  status["currentNumberScheduled"] = current;
  status["numberMisscheduled"] = misscheduled;
  status["numberReady"] = ready;
  status["numberAvailable"] = available;
  status["numberUnavailable"] = desired - available;
  status["updatedNumberScheduled"] = updated;
  status["observedGeneration"] = generation;
  if (available == 0) status.erase("numberAvailable");
  if (desired - available == 0) status.erase("numberUnavailable");
  writer_.WriteStatus(daemon_sets, ds, status);
}

}  // namespace canhazgpu::simcluster
