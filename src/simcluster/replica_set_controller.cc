#include "simcluster/replica_set_controller.h"

#include <algorithm>

#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/label_selector.h"

namespace canhazgpu::simcluster {

using clusterview::View;
using nlohmann::json;

namespace {

// Which pods go first when there are too many (the controller's
// ActivePods order): not on a node, not ready, then the youngest.
bool DeleteBefore(const json& a, const json& b) {
  const bool a_bound = !kube::StringAt(a, "/spec/nodeName"_json_pointer).empty();
  const bool b_bound = !kube::StringAt(b, "/spec/nodeName"_json_pointer).empty();
  if (a_bound != b_bound) return !a_bound;
  if (PodReady(a) != PodReady(b)) return !PodReady(a);
  return kube::StringAt(a, "/metadata/creationTimestamp"_json_pointer) >
         kube::StringAt(b, "/metadata/creationTimestamp"_json_pointer);
}

}  // namespace

void ReplicaSetController::Sync(View& view, const KindInPass& replica_sets) {
  std::vector<json> all;
  for (const auto& [key, rs] : *replica_sets.objects) all.push_back(rs);
  for (const json& rs : all) SyncOne(view, replica_sets, rs);
}

void ReplicaSetController::SyncOne(View& view, const KindInPass& replica_sets, const json& rs) {
  if (!kube::StringAt(rs, "/metadata/deletionTimestamp"_json_pointer).empty()) return;
  const json spec = rs.value("spec", json::object());
  const int64_t want = IntAt(spec, "/replicas"_json_pointer, 1);
  auto active_pods = [&] {
    std::vector<json> active;
    for (const json& pod : Controlled(view.pods, rs))
      if (PodActive(pod) && !writer_.Deleting(pod)) active.push_back(pod);
    return active;
  };
  std::vector<json> active = active_pods();
  const std::string name = kube::StringAt(rs, "/metadata/name"_json_pointer);
  if (static_cast<int64_t>(active.size()) < want) {
    for (int64_t i = static_cast<int64_t>(active.size()); i < want; ++i) {
      if (!writer_.CreatePod(view, rs, "apps/v1", "ReplicaSet", spec.value("template", json()),
                             name + "-")) {
        break;
      }
    }
  } else if (static_cast<int64_t>(active.size()) > want) {
    std::sort(active.begin(), active.end(), DeleteBefore);
    for (size_t i = 0; i < active.size() - static_cast<size_t>(want); ++i)
      writer_.DeletePod(active[i]);
  }
  active = active_pods();
  const json template_labels = spec.value("/template/metadata/labels"_json_pointer, json());
  const int64_t min_ready = IntAt(spec, "/minReadySeconds"_json_pointer, 0);
  int64_t labelled = 0, ready = 0, available = 0;
  for (const json& pod : active) {
    const json labels = pod.value("/metadata/labels"_json_pointer, json::object());
    bool all_labels = true;
    if (template_labels.is_object()) {
      for (const auto& [key, value] : template_labels.items())
        all_labels = all_labels && labels.value(key, json()) == value;
    }
    labelled += all_labels ? 1 : 0;
    ready += PodReady(pod) ? 1 : 0;
    available += PodAvailable(pod, min_ready, writer_.clock().Now()) ? 1 : 0;
  }
  json status = rs.value("status", json::object());
  status["replicas"] = active.size();
  status["fullyLabeledReplicas"] = labelled;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  status["observedGeneration"] = IntAt(rs, "/metadata/generation"_json_pointer, 0);
  writer_.WriteStatus(replica_sets, rs, status);
}

}  // namespace canhazgpu::simcluster
