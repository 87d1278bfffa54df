#include "clusterview/pod_affinity.h"

#include "clusterview/node_attempt.h"
#include "kube/json_object.h"
#include "kube/label_selector.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

json RequiredAntiAffinity(const json& pod) {
  const json terms = pod.value(
      "/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution"_json_pointer,
      json::array());
  return terms.is_array() ? terms : json::array();
}

// Whether `term` of a pod in `term_namespace` selects `other`.
bool TermSelects(const json& term, const std::string& term_namespace, const json& other) {
  if (!term.is_object()) return false;
  const std::string other_namespace = kube::StringAt(other, "/metadata/namespace"_json_pointer);
  const json namespaces = term.value("namespaces", json::array());
  bool in_scope = other_namespace == term_namespace;
  if (namespaces.is_array() && !namespaces.empty()) {
    in_scope = false;
    for (const json& n : namespaces) in_scope = in_scope || n == other_namespace;
  }
  if (!in_scope || !term.contains("labelSelector")) return false;
  return kube::SelectsLabels(term["labelSelector"],
                             other.value("/metadata/labels"_json_pointer, json::object()));
}

// The value of `key` among the labels of node `name`; "" when absent.
std::string NodeLabel(const View& view, const std::string& name, const std::string& key) {
  auto node = view.nodes.find(name);
  if (node == view.nodes.end() || key.empty()) return "";
  const json labels = node->second.value("/metadata/labels"_json_pointer, json::object());
  return labels.is_object() ? kube::StringField(labels, key.c_str()) : "";
}

// Whether `a` and `b` are in one domain of `key` (both labelled alike).
bool SameDomain(const View& view, const std::string& a, const std::string& b,
                const std::string& key) {
  const std::string domain = NodeLabel(view, a, key);
  return !domain.empty() && domain == NodeLabel(view, b, key);
}

}  // namespace

std::string PodAntiAffinityMismatch(const View& view, const json& pod, const std::string& node) {
  const json own_terms = RequiredAntiAffinity(pod);
  const std::string ns = kube::StringAt(pod, "/metadata/namespace"_json_pointer);
  const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
  bool existing_refuses = false;
  for (const auto& [key, other] : view.pods) {
    const std::string other_node = kube::StringAt(other, "/spec/nodeName"_json_pointer);
    if (other_node.empty() || internal::PodDone(other)) continue;
    if (!uid.empty() && kube::StringAt(other, "/metadata/uid"_json_pointer) == uid) continue;
    for (const json& term : own_terms) {
      const std::string topology = kube::StringField(term, "topologyKey");
      if (SameDomain(view, node, other_node, topology) && TermSelects(term, ns, other))
        return kAntiAffinityMismatch;
    }
    const std::string other_ns = kube::StringAt(other, "/metadata/namespace"_json_pointer);
    for (const json& term : RequiredAntiAffinity(other)) {
      const std::string topology = kube::StringField(term, "topologyKey");
      existing_refuses = existing_refuses || (SameDomain(view, node, other_node, topology) &&
                                              TermSelects(term, other_ns, pod));
    }
  }
  return existing_refuses ? kExistingAntiAffinityMismatch : "";
}

}  // namespace canhazgpu::clusterview
