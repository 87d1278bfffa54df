#include "clusterview/node_fit.h"

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

using kube::StringField;

// core/v1 Toleration against a node taint (the same rule as devices').
bool Tolerates(const json& toleration, const std::string& key, const std::string& value,
               const std::string& effect) {
  const std::string t_effect = StringField(toleration, "effect");
  if (!t_effect.empty() && t_effect != effect) return false;
  const bool exists = StringField(toleration, "operator") == "Exists";
  const std::string t_key = StringField(toleration, "key");
  if (t_key.empty()) return exists;
  if (t_key != key) return false;
  return exists || StringField(toleration, "value") == value;
}

bool HasValue(const json& values, const std::string& value) {
  if (!values.is_array()) return false;
  for (const json& v : values)
    if (v.is_string() && v.get<std::string>() == value) return true;
  return false;
}

// One NodeSelectorRequirement against a node label (`present` = the node
// has the label, `value` its value), as k8s.io/component-helpers'
// nodeaffinity does. An unknown operator matches nothing.
bool RequirementMatches(const json& requirement, bool present, const std::string& value) {
  const std::string op = StringField(requirement, "operator");
  const json values = requirement.value("values", json::array());
  if (op == "In") return present && HasValue(values, value);
  if (op == "NotIn") return !present || !HasValue(values, value);
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  if (op != "Gt" && op != "Lt") return false;
  // Gt and Lt: exactly one integer value, and the label an integer.
  int64_t label = 0, bound = 0;
  if (!present || values.size() != 1 || !values[0].is_string() || !ParseInt(value, &label) ||
      !ParseInt(values[0].get<std::string>(), &bound)) {
    return false;
  }
  return op == "Gt" ? label > bound : label < bound;
}

// One NodeSelectorTerm: its matchExpressions on labels and its matchFields
// (metadata.name only, the one field the API allows) all hold. A term with
// neither matches nothing.
bool TermMatches(const json& term, const json& node) {
  const json expressions = term.value("matchExpressions", json::array());
  const json fields = term.value("matchFields", json::array());
  if (expressions.empty() && fields.empty()) return false;
  const json labels = node.value("/metadata/labels"_json_pointer, json::object());
  for (const json& e : expressions) {
    auto it = labels.find(StringField(e, "key"));
    const bool present = it != labels.end() && it->is_string();
    if (!RequirementMatches(e, present, present ? it->get<std::string>() : "")) return false;
  }
  for (const json& f : fields) {
    const std::string op = StringField(f, "operator");
    if (StringField(f, "key") != "metadata.name" || (op != "In" && op != "NotIn")) return false;
    if (!RequirementMatches(f, true, StringField(node.value("metadata", json::object()), "name")))
      return false;
  }
  return true;
}

// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution:
// absent = any node; its terms are ORed, so an empty list matches nothing.
bool RequiredAffinityMatches(const json& spec, const json& node) {
  const json required = spec.value(
      "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"_json_pointer, json());
  if (!required.is_object()) return true;
  for (const json& term : required.value("nodeSelectorTerms", json::array()))
    if (TermMatches(term, node)) return true;
  return false;
}

bool Ready(const json& node) {
  const json conditions = node.value("/status/conditions"_json_pointer, json::array());
  for (const json& c : conditions) {
    if (StringField(c, "type") == "Ready") return StringField(c, "status") == "True";
  }
  return false;
}

}  // namespace

std::string NodeMismatch(const json& pod, const json& node) {
  const json spec = pod.value("spec", json::object());
  const json tolerations = spec.value("tolerations", json::array());
  if (node.value("/spec/unschedulable"_json_pointer, false)) {
    // Pods that tolerate node.kubernetes.io/unschedulable may still go.
    bool tolerated = false;
    for (const json& t : tolerations)
      tolerated |= Tolerates(t, "node.kubernetes.io/unschedulable", "", "NoSchedule");
    if (!tolerated) return "node(s) were unschedulable";
  }
  json taints = node.value("/spec/taints"_json_pointer, json::array());
  if (!Ready(node)) taints.push_back({{"key", kNotReadyTaint}, {"effect", "NoSchedule"}});
  for (const json& taint : taints) {
    const std::string effect = StringField(taint, "effect");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    const std::string key = StringField(taint, "key"), value = StringField(taint, "value");
    bool tolerated = false;
    for (const json& t : tolerations) tolerated |= Tolerates(t, key, value, effect);
    if (!tolerated) return StrCat("node(s) had untolerated taint {", key, ": ", value, "}");
  }
  const json labels = node.value("/metadata/labels"_json_pointer, json::object());
  const json selector = spec.value("nodeSelector", json::object());
  for (const auto& [key, value] : selector.items()) {
    auto it = labels.find(key);
    if (it == labels.end() || *it != value)
      return "node(s) didn't match Pod's node affinity/selector";
  }
  if (!RequiredAffinityMatches(spec, node))
    return "node(s) didn't match Pod's node affinity/selector";
  return "";
}

}  // namespace canhazgpu::clusterview
