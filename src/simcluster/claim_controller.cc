#include "simcluster/claim_controller.h"

#include <algorithm>
#include <vector>

#include "clusterview/placement.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::simcluster {

using clusterview::KeyOf;
using clusterview::kPodClaimNameAnnotation;
using clusterview::PodClaimNames;
using clusterview::View;
namespace {

using nlohmann::json;

bool PodDone(const json& pod) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  return phase == "Succeeded" || phase == "Failed";
}

// The claim the controller made for the pod's `entry` before, found by its
// owner and annotation (the pod's status may not say so yet).
const json* GeneratedClaim(const View& view, const std::string& ns, const std::string& pod_uid,
                           const std::string& entry) {
  for (const auto& [key, claim] : view.claims) {
    if (kube::StringAt(claim, "/metadata/namespace"_json_pointer) != ns) continue;
    const json annotations = claim.value("/metadata/annotations"_json_pointer, json::object());
    if (annotations.value(kPodClaimNameAnnotation, "") != entry) continue;
    for (const json& o : claim.value("/metadata/ownerReferences"_json_pointer, json::array()))
      if (o.value("uid", "") == pod_uid && o.value("controller", false)) return &claim;
  }
  return nullptr;
}

// The claim the real controller makes from a template.
json ClaimFromTemplate(const json& pod, const std::string& entry, const json& tmpl) {
  // Room for the five random characters within a 63-character name.
  std::string generate_name =
      StrCat(kube::StringAt(pod, "/metadata/name"_json_pointer), "-", entry);
  if (generate_name.size() > 57) generate_name.resize(57);
  generate_name += "-";
  json meta = {{"generateName", generate_name},
               {"namespace", kube::StringAt(pod, "/metadata/namespace"_json_pointer)}};
  json annotations = tmpl.value("/spec/metadata/annotations"_json_pointer, json::object());
  annotations[kPodClaimNameAnnotation] = entry;
  meta["annotations"] = annotations;
  const json labels = tmpl.value("/spec/metadata/labels"_json_pointer, json::object());
  if (!labels.empty()) meta["labels"] = labels;
  meta["ownerReferences"] = {{{"apiVersion", "v1"},
                              {"kind", "Pod"},
                              {"name", kube::StringAt(pod, "/metadata/name"_json_pointer)},
                              {"uid", kube::StringAt(pod, "/metadata/uid"_json_pointer)},
                              {"controller", true},
                              {"blockOwnerDeletion", true}}};
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", meta},
          {"spec", tmpl.value("/spec/spec"_json_pointer, json::object())}};
}

// Whether a reservation for this pod must stay: it exists (same uid), is
// not done, and has not been deleted before it was bound to a node.
bool PodNeedsClaim(const View& view, const std::string& ns, const json& ref) {
  auto it = view.pods.find(StrCat(ns, "/", ref.value("name", "")));
  if (it == view.pods.end()) return false;
  const json& pod = it->second;
  if (kube::StringAt(pod, "/metadata/uid"_json_pointer) != ref.value("uid", "")) return false;
  if (PodDone(pod)) return false;
  return kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty() ||
         !kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty();
}

}  // namespace

void ClaimController::Sync(View& view) {
  std::vector<json> pods;
  for (const auto& [key, pod] : view.pods) pods.push_back(pod);
  for (const json& pod : pods) CreateTemplateClaims(view, pod);
  std::vector<json> claims;
  for (const auto& [key, claim] : view.claims) claims.push_back(claim);
  for (const json& claim : claims) ReleaseClaim(view, claim);
}

void ClaimController::CreateTemplateClaims(View& view, const json& pod) {
  if (PodDone(pod) || !kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty())
    return;
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  const json entries = pod.value("/spec/resourceClaims"_json_pointer, json::array());
  const auto names = PodClaimNames(pod);
  json statuses = pod.value("/status/resourceClaimStatuses"_json_pointer, json::array());
  bool changed = false;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string template_name = entries[i].value("resourceClaimTemplateName", "");
    const std::string& entry = names[i].first;
    if (template_name.empty() || !names[i].second.empty()) continue;
    std::string claim_name;
    if (const json* existing = GeneratedClaim(view, ns, uid, entry)) {
      claim_name = kube::StringAt(*existing, "/metadata/name"_json_pointer);
    } else {
      auto tmpl = view.templates.find(StrCat(ns, "/", template_name));
      if (tmpl == view.templates.end()) continue;  // the scheduler says what it waits for
      auto created = client_.CreateObject(kube::kResourceClaims, ns,
                                          ClaimFromTemplate(pod, entry, tmpl->second));
      if (!created.ok()) {
        log_(StrCat("claim controller: pod ", KeyOf(pod), ": ", created.status().message()));
        continue;
      }
      Wrote(claims_, view.claims, *created);
      claim_name = kube::StringAt(*created, "/metadata/name"_json_pointer);
    }
    statuses.erase(std::remove_if(statuses.begin(), statuses.end(),
                                  [&](const json& s) { return s.value("name", "") == entry; }),
                   statuses.end());
    statuses.push_back({{"name", entry}, {"resourceClaimName", claim_name}});
    changed = true;
  }
  if (!changed) return;
  json updated = pod;
  updated["status"]["resourceClaimStatuses"] = statuses;
  auto written = client_.UpdateStatus(kube::kPods, ns, updated);
  if (!written.ok()) {
    log_(StrCat("claim controller: pod ", KeyOf(pod), ": ", written.status().message()));
    return;
  }
  Wrote(pods_, view.pods, *written);
}

void ClaimController::ReleaseClaim(View& view, const json& claim) {
  const std::string ns = kube::StringAt(claim, "/metadata/namespace"_json_pointer);
  const json reserved = claim.value("/status/reservedFor"_json_pointer, json::array());
  json kept = json::array();
  for (const json& ref : reserved) {
    if (ref.value("resource", "") != "pods" || PodNeedsClaim(view, ns, ref)) kept.push_back(ref);
  }
  const json allocation = claim.value("/status/allocation"_json_pointer, json());
  const bool allocated = allocation.is_object() && !allocation.empty();
  json current = claim;
  if (kept.size() != reserved.size() || (kept.empty() && allocated)) {
    json& status = current["status"];
    if (kept.empty()) {
      status.erase("reservedFor");
      // Device status describes allocated devices only.
      status.erase("allocation");
      status.erase("devices");
    } else {
      status["reservedFor"] = kept;
    }
    auto written = client_.UpdateStatus(kube::kResourceClaims, ns, current);
    if (!written.ok()) {
      log_(StrCat("claim controller: claim ", KeyOf(claim), ": ", written.status().message()));
      return;
    }
    Wrote(claims_, view.claims, *written);
    current = *written;
  }
  if (!kept.empty()) return;
  json finalizers = current.value("/metadata/finalizers"_json_pointer, json::array());
  auto it = std::find(finalizers.begin(), finalizers.end(), kDeleteProtectionFinalizer);
  if (it == finalizers.end()) return;
  finalizers.erase(it);
  current["metadata"]["finalizers"] = finalizers;
  auto written = client_.Update(kube::kResourceClaims, ns, current);
  if (!written.ok()) {
    if (!kube::IsApiNotFound(written.status()))
      log_(StrCat("claim controller: claim ", KeyOf(claim), ": ", written.status().message()));
    return;
  }
  // Without finalizers a claim being deleted is gone now.
  if (!kube::StringAt(*written, "/metadata/deletionTimestamp"_json_pointer).empty()) {
    claims_.Erase(*written);
    view.claims.erase(KeyOf(claim));
    return;
  }
  Wrote(claims_, view.claims, *written);
}

}  // namespace canhazgpu::simcluster
