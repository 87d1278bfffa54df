#include "kubesim/resource_types.h"

namespace canhazgpu::kubesim {

ResourceTypes ResourceTypes::BuiltIn() {
  ResourceTypes t;
  auto add = [&](std::string group, std::string resource, std::string singular, std::string kind,
                 bool namespaced, bool status, std::vector<std::string> short_names = {},
                 std::vector<std::string> fields = {}) -> ResourceType& {
    t.Add({.group = std::move(group),
           .version = "v1",
           .resource = std::move(resource),
           .singular = std::move(singular),
           .kind = std::move(kind),
           .namespaced = namespaced,
           .has_status = status,
           .short_names = std::move(short_names),
           .selectable_fields = std::move(fields)});
    return t.types_.back();
  };
  add("", "pods", "pod", "Pod", true, true, {"po"},
      {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
       "status.phase", "status.podIP", "status.nominatedNodeName"});
  add("", "namespaces", "namespace", "Namespace", false, true, {"ns"}, {"status.phase"});
  add("", "nodes", "node", "Node", false, true, {"no"}, {"spec.unschedulable"});
  add("", "configmaps", "configmap", "ConfigMap", true, false, {"cm"});
  add("", "secrets", "secret", "Secret", true, false, {}, {"type"});
  add("", "services", "service", "Service", true, true, {"svc"});
  add("", "serviceaccounts", "serviceaccount", "ServiceAccount", true, false, {"sa"});
  add("", "events", "event", "Event", true, false, {"ev"},
      {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
       "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
       "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"});
  add("apps", "deployments", "deployment", "Deployment", true, true, {"deploy"}).has_scale = true;
  add("apps", "replicasets", "replicaset", "ReplicaSet", true, true, {"rs"}).has_scale = true;

  add("apps", "daemonsets", "daemonset", "DaemonSet", true, true, {"ds"});
  add("batch", "jobs", "job", "Job", true, true);
  add("rbac.authorization.k8s.io", "roles", "role", "Role", true, false);
  add("rbac.authorization.k8s.io", "rolebindings", "rolebinding", "RoleBinding", true, false);
  add("rbac.authorization.k8s.io", "clusterroles", "clusterrole", "ClusterRole", false, false);
  add("rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding",
      "ClusterRoleBinding", false, false);
  add("coordination.k8s.io", "leases", "lease", "Lease", true, false);
  add("resource.k8s.io", "resourceslices", "resourceslice", "ResourceSlice", false, false, {},
      {"spec.nodeName", "spec.driver", "spec.pool.name"});
  add("resource.k8s.io", "resourceclaims", "resourceclaim", "ResourceClaim", true, true);
  add("resource.k8s.io", "resourceclaimtemplates", "resourceclaimtemplate", "ResourceClaimTemplate",
      true, false);
  add("resource.k8s.io", "deviceclasses", "deviceclass", "DeviceClass", false, false);
  add("apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition",
      "CustomResourceDefinition", false, true, {"crd", "crds"});
  return t;
}

void ResourceTypes::Add(ResourceType type) {
  Remove(type.group, type.resource);
  types_.push_back(std::move(type));
}

bool ResourceTypes::Remove(const std::string& group, const std::string& resource) {
  const auto before = types_.size();
  std::erase_if(types_,
                [&](const ResourceType& t) { return t.group == group && t.resource == resource; });
  return types_.size() != before;
}

const ResourceType* ResourceTypes::Find(const std::string& group, const std::string& version,
                                        const std::string& resource) const {
  for (const ResourceType& t : types_) {
    if (t.group == group && t.version == version && t.resource == resource) return &t;
  }
  return nullptr;
}

const ResourceType* ResourceTypes::FindKind(const std::string& api_version,
                                            const std::string& kind) const {
  for (const ResourceType& t : types_) {
    if (t.api_version() == api_version && t.kind == kind) return &t;
  }
  return nullptr;
}

}  // namespace canhazgpu::kubesim
