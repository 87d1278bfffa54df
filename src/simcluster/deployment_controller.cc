#include "simcluster/deployment_controller.h"

#include <algorithm>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::View;
using nlohmann::json;

namespace {

constexpr char kHashLabel[] = "pod-template-hash";
constexpr char kRevisionAnnotation[] = "deployment.kubernetes.io/revision";

int64_t Replicas(const json& rs) { return IntAt(rs, "/spec/replicas"_json_pointer, 1); }
int64_t StatusCount(const json& object, const char* field) {
  return IntAt(object.value("status", json::object()), json::json_pointer("/" + std::string(field)),
               0);
}

// Whether `rs` runs the deployment's `pod_template` (its own
// pod-template-hash label aside).
bool RunsTemplate(const json& rs, const json& pod_template) {
  json own = rs.value("/spec/template"_json_pointer, json::object());
  if (own.contains("/metadata/labels"_json_pointer) && own["metadata"]["labels"].is_object()) {
    own["metadata"]["labels"].erase(kHashLabel);
    if (own["metadata"]["labels"].empty() &&
        !pod_template.contains("/metadata/labels"_json_pointer)) {
      own["metadata"].erase("labels");
    }
  }
  if (own.contains("metadata") && own["metadata"].empty() && !pod_template.contains("metadata"))
    own.erase("metadata");
  return own == pod_template;
}

int64_t Revision(const json& rs) {
  int64_t revision = 0;
  ParseInt(rs.value("/metadata/annotations"_json_pointer, json::object())
               .value(kRevisionAnnotation, std::string("0")),
           &revision);
  return revision;
}

}  // namespace

void DeploymentController::Sync(View& view, const KindInPass& deployments,
                                const KindInPass& replica_sets) {
  std::vector<json> all;
  for (const auto& [key, d] : *deployments.objects) all.push_back(d);
  for (const json& d : all) SyncOne(view, deployments, replica_sets, d);
}

std::optional<json> DeploymentController::CreateNewReplicaSet(const KindInPass& replica_sets,
                                                              const json& d,
                                                              const std::vector<json>& owned,
                                                              int64_t replicas) {
  const json spec = d.value("spec", json::object());
  json pod_template = spec.value("template", json::object());
  const std::string hash = TemplateHash(pod_template);
  pod_template["metadata"]["labels"][kHashLabel] = hash;
  json selector = spec.value("selector", json::object());
  selector["matchLabels"][kHashLabel] = hash;
  int64_t revision = 0;
  for (const json& rs : owned) revision = std::max(revision, Revision(rs));
  const std::string name = kube::StringAt(d, "/metadata/name"_json_pointer);
  json rs_spec = {{"replicas", replicas}, {"selector", selector}, {"template", pod_template}};
  if (spec.contains("minReadySeconds")) rs_spec["minReadySeconds"] = spec["minReadySeconds"];
  json labels = pod_template["metadata"]["labels"];
  const json rs = {{"apiVersion", "apps/v1"},
                   {"kind", "ReplicaSet"},
                   {"metadata",
                    {{"name", StrCat(name, "-", hash)},
                     {"namespace", kube::StringAt(d, "/metadata/namespace"_json_pointer)},
                     {"labels", labels},
                     {"annotations",
                      {{kRevisionAnnotation, std::to_string(revision + 1)},
                       {"deployment.kubernetes.io/desired-replicas", std::to_string(Replicas(d))}}},
                     {"ownerReferences",
                      {{{"apiVersion", "apps/v1"},
                        {"kind", "Deployment"},
                        {"name", name},
                        {"uid", kube::StringAt(d, "/metadata/uid"_json_pointer)},
                        {"controller", true},
                        {"blockOwnerDeletion", true}}}}}},
                   {"spec", rs_spec}};
  if (!writer_.Create(replica_sets, rs)) return std::nullopt;
  return replica_sets.objects->at(KeyOf(rs));
}

void DeploymentController::Scale(const KindInPass& replica_sets, json& rs, int64_t replicas) {
  if (Replicas(rs) == replicas) return;
  json updated = rs;
  updated["spec"]["replicas"] = replicas;
  if (writer_.Update(replica_sets, updated)) rs = replica_sets.objects->at(KeyOf(rs));
}

void DeploymentController::RollUpdate(const KindInPass& replica_sets, const json& d,
                                      const std::vector<json>& owned, const json& strategy,
                                      std::optional<json>& new_rs, std::vector<json>& old) {
  const int64_t replicas = Replicas(d);
  const json rolling = strategy.value("rollingUpdate", json::object());
  const int64_t surge = ScaledValue(rolling.value("maxSurge", json("25%")), replicas, true);
  int64_t unavailable = ScaledValue(rolling.value("maxUnavailable", json("25%")), replicas, false);
  if (surge == 0 && unavailable == 0) unavailable = 1;
  int64_t total = 0;
  for (const json& rs : old) total += Replicas(rs);
  const int64_t new_now = new_rs ? Replicas(*new_rs) : 0;
  total += new_now;
  int64_t new_want = new_now;
  if (old.empty() || new_now > replicas) {
    new_want = replicas;
  } else if (new_now < replicas) {
    new_want =
        new_now + std::max<int64_t>(0, std::min(replicas + surge - total, replicas - new_now));
  }
  if (!new_rs) new_rs = CreateNewReplicaSet(replica_sets, d, owned, new_want);
  if (new_rs) Scale(replica_sets, *new_rs, new_want);
  // The old ones shrink only as far as availability allows.
  const int64_t new_unavailable =
      new_rs ? std::max<int64_t>(0, Replicas(*new_rs) - StatusCount(*new_rs, "availableReplicas"))
             : 0;
  int64_t available = new_rs ? StatusCount(*new_rs, "availableReplicas") : 0;
  int64_t all = new_rs ? Replicas(*new_rs) : 0;
  for (const json& rs : old) {
    available += StatusCount(rs, "availableReplicas");
    all += Replicas(rs);
  }
  const int64_t min_available = replicas - unavailable;
  // Unhealthy old pods may go down to the floor of all pods...
  int64_t cleanup = all - min_available - new_unavailable;
  for (json& rs : old) {
    const int64_t unhealthy =
        std::max<int64_t>(0, Replicas(rs) - StatusCount(rs, "availableReplicas"));
    const int64_t cut = std::clamp<int64_t>(cleanup, 0, unhealthy);
    if (cut > 0) Scale(replica_sets, rs, Replicas(rs) - cut);
    cleanup -= cut;
  }
  // ...and healthy ones down to the floor of available pods.
  int64_t scale_down = available - min_available;
  for (json& rs : old) {
    const int64_t cut = std::clamp<int64_t>(scale_down, 0, Replicas(rs));
    if (cut > 0) Scale(replica_sets, rs, Replicas(rs) - cut);
    scale_down -= cut;
  }
}

void DeploymentController::SyncOne(View& view, const KindInPass& deployments,
                                   const KindInPass& replica_sets, const json& d) {
  if (!kube::StringAt(d, "/metadata/deletionTimestamp"_json_pointer).empty()) return;
  const json spec = d.value("spec", json::object());
  const json pod_template = spec.value("template", json::object());
  const int64_t replicas = Replicas(d);
  std::vector<json> owned = Controlled(*replica_sets.objects, d);
  std::optional<json> new_rs;
  std::vector<json> old;
  for (const json& rs : owned) {
    if (!new_rs && RunsTemplate(rs, pod_template)) {
      new_rs = rs;
    } else {
      old.push_back(rs);
    }
  }
  // Oldest first: they shrink first.
  std::sort(old.begin(), old.end(),
            [](const json& a, const json& b) { return Revision(a) < Revision(b); });
  if (spec.value("paused", json(false)) != true) {
    const json strategy = spec.value("strategy", json::object());
    if (strategy.value("type", json("RollingUpdate")) == "Recreate") {
      bool old_running = false;
      for (json& rs : old) {
        Scale(replica_sets, rs, 0);
        for (const json& pod : Controlled(view.pods, rs)) old_running |= PodActive(pod);
      }
      if (!old_running) {
        if (!new_rs) new_rs = CreateNewReplicaSet(replica_sets, d, owned, replicas);
        if (new_rs) Scale(replica_sets, *new_rs, replicas);
      }
    } else {
      RollUpdate(replica_sets, d, owned, strategy, new_rs, old);
    }
  }
  owned = Controlled(*replica_sets.objects, d);
  const json* current = nullptr;
  for (const json& rs : owned)
    if (new_rs && KeyOf(rs) == KeyOf(*new_rs)) current = &rs;
  WriteStatus(deployments, d, owned, current);
}

void DeploymentController::WriteStatus(const KindInPass& deployments, const json& d,
                                       const std::vector<json>& owned, const json* new_rs) {
  const int64_t replicas = Replicas(d);
  int64_t total = 0, ready = 0, available = 0, wanted = 0;
  for (const json& rs : owned) {
    total += StatusCount(rs, "replicas");
    ready += StatusCount(rs, "readyReplicas");
    available += StatusCount(rs, "availableReplicas");
    wanted += Replicas(rs);
  }
  const int64_t updated = new_rs ? StatusCount(*new_rs, "replicas") : 0;
  json status = d.value("status", json::object());
  status["observedGeneration"] = IntAt(d, "/metadata/generation"_json_pointer, 0);
  status["replicas"] = total;
  status["updatedReplicas"] = updated;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  status["unavailableReplicas"] = std::max<int64_t>(0, wanted - available);
  const json rolling = d.value("/spec/strategy/rollingUpdate"_json_pointer, json::object());
  const int64_t max_unavailable =
      d.value("/spec/strategy/type"_json_pointer, json("RollingUpdate")) == "Recreate"
          ? replicas
          : ScaledValue(rolling.value("maxUnavailable", json("25%")), replicas, false);
  json& conditions = status["conditions"];
  const bool minimum = available >= replicas - max_unavailable;
  writer_.SetCondition(conditions, "Available", minimum,
                       minimum ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                       minimum ? "Deployment has minimum availability."
                               : "Deployment does not have minimum availability.");
  const std::string rs_name = new_rs ? kube::StringAt(*new_rs, "/metadata/name"_json_pointer) : "";
  const bool complete = new_rs != nullptr && updated == replicas && total == replicas &&
                        available == replicas &&
                        StatusCount(*new_rs, "observedGeneration") >=
                            IntAt(*new_rs, "/metadata/generation"_json_pointer, 0);
  writer_.SetCondition(
      conditions, "Progressing", true, complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
      complete ? StrCat("ReplicaSet \"", rs_name, "\" has successfully progressed.")
               : StrCat("ReplicaSet \"", rs_name, "\" is progressing."));
  writer_.WriteStatus(deployments, d, status);
}

}  // namespace canhazgpu::simcluster
