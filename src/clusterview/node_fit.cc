#include "clusterview/node_fit.h"

#include "core/strings.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

std::string Text(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// core/v1 Toleration against a node taint (the same rule as devices').
bool Tolerates(const json& toleration, const std::string& key, const std::string& value,
               const std::string& effect) {
  const std::string t_effect = Text(toleration, "effect");
  if (!t_effect.empty() && t_effect != effect) return false;
  const bool exists = Text(toleration, "operator") == "Exists";
  const std::string t_key = Text(toleration, "key");
  if (t_key.empty()) return exists;
  if (t_key != key) return false;
  return exists || Text(toleration, "value") == value;
}

bool Ready(const json& node) {
  const json conditions = node.value("/status/conditions"_json_pointer, json::array());
  for (const json& c : conditions) {
    if (Text(c, "type") == "Ready") return Text(c, "status") == "True";
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
    const std::string effect = Text(taint, "effect");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    const std::string key = Text(taint, "key"), value = Text(taint, "value");
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
  return "";
}

}  // namespace canhazgpu::clusterview
