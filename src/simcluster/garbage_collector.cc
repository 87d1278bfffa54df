#include "simcluster/garbage_collector.h"

#include <set>
#include <string_view>

#include "clusterview/view.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {
namespace {

using nlohmann::json;

struct OwnerKind {
  std::string_view group;  // of the owner's apiVersion: "" for v1
  std::string_view kind;
  const kube::ResourceRef& ref;
};

// The kinds an owner reference can be resolved for: what the simulated
// cluster's programs create and own things by.
const OwnerKind kOwnerKinds[] = {
    {"", "Pod", kube::kPods},
    {"", "Node", kube::kNodes},
    {"", "Namespace", kube::kNamespaces},
    {"", "ConfigMap", kube::kConfigMaps},
    {"resource.k8s.io", "ResourceClaim", kube::kResourceClaims},
    {"resource.k8s.io", "ResourceClaimTemplate", kube::kResourceClaimTemplates},
    {"resource.k8s.io", "ResourceSlice", kube::kResourceSlices},
    {"resource.k8s.io", "DeviceClass", kube::kDeviceClasses},
    {"apps", "Deployment", kDeployments},
    {"apps", "ReplicaSet", kReplicaSets},
    {"apps", "DaemonSet", kDaemonSets},
    {"batch", "Job", kJobs},
};

const kube::ResourceRef* OwnerResource(const json& owner) {
  const std::string api_version = owner.value("apiVersion", "");
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string kind = owner.value("kind", "");
  for (const OwnerKind& k : kOwnerKinds) {
    if (k.group == group && k.kind == kind) return &k.ref;
  }
  return nullptr;
}

}  // namespace

bool GarbageCollector::OwnerGone(const json& owner, const std::string& ns) {
  const kube::ResourceRef* ref = OwnerResource(owner);
  if (ref == nullptr) return false;
  absl::StatusOr<json> got = client_.Get(*ref, ref->namespaced ? ns : "", owner.value("name", ""));
  if (got.ok()) return kube::StringAt(*got, "/metadata/uid"_json_pointer) != owner.value("uid", "");
  return kube::IsApiNotFound(got.status());
}

int GarbageCollector::Collect(const std::vector<WatchedObjects>& watched) {
  std::set<std::string> uids;
  for (const WatchedObjects& w : watched) {
    for (const json& object : w.objects)
      uids.insert(kube::StringAt(object, "/metadata/uid"_json_pointer));
  }
  int deleted = 0;
  for (const WatchedObjects& w : watched) {
    for (const json& object : w.objects) {
      const json owners = object.value("/metadata/ownerReferences"_json_pointer, json::array());
      if (owners.empty()) continue;
      if (!kube::StringAt(object, "/metadata/deletionTimestamp"_json_pointer).empty()) continue;
      bool owned = false;
      for (const json& owner : owners) owned = owned || uids.contains(owner.value("uid", ""));
      if (owned) continue;
      const std::string ns = kube::StringAt(object, "/metadata/namespace"_json_pointer);
      bool all_gone = true;
      for (const json& owner : owners) all_gone = all_gone && OwnerGone(owner, ns);
      if (!all_gone) continue;
      const std::string name = kube::StringAt(object, "/metadata/name"_json_pointer);
      absl::Status status = client_.Delete(
          *w.ref, ns, name,
          {.propagation = "Background",
           .precondition_uid = kube::StringAt(object, "/metadata/uid"_json_pointer)});
      // NotFound: someone (the claim controller, a user) was first;
      // Conflict: the uid precondition, a new object of that name.
      if (status.ok()) {
        ++deleted;
      } else if (!kube::IsApiNotFound(status) && !kube::IsApiConflict(status)) {
        log_(StrCat("garbage collector: ", w.ref->Qualified(), " ", clusterview::KeyOf(object),
                    ": ", status.message()));
      }
    }
  }
  return deleted;
}

}  // namespace canhazgpu::simcluster
