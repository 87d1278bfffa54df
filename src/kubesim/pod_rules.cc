#include "kubesim/pod_rules.h"

#include <set>
#include <string>

#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

// The gates' names, in order; a gate without a string name is left to the
// schema check.
std::vector<std::string> GateNames(const json& pod) {
  std::vector<std::string> names;
  const json gates = pod.value("/spec/schedulingGates"_json_pointer, json::array());
  if (!gates.is_array()) return names;
  for (const json& gate : gates) names.push_back(kube::StringField(gate, "name"));
  return names;
}

}  // namespace

std::vector<kube::StatusCause> CheckSchedulingGates(const json& pod, const json* old) {
  std::vector<kube::StatusCause> causes;
  const std::vector<std::string> gates = GateNames(pod);
  std::set<std::string> seen;
  for (size_t i = 0; i < gates.size(); ++i) {
    if (!seen.insert(gates[i]).second) {
      causes.push_back({"FieldValueDuplicate", StrCat("Duplicate value: \"", gates[i], "\""),
                        StrCat("spec.schedulingGates[", i, "].name")});
    }
  }
  if (old == nullptr) {
    if (!gates.empty() && !kube::StringAt(pod, "/spec/nodeName"_json_pointer).empty()) {
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: cannot be set until all schedulingGates have been cleared",
                        "spec.nodeName"});
    }
    return causes;
  }
  const std::vector<std::string> before = GateNames(*old);
  const std::set<std::string> had(before.begin(), before.end());
  for (const std::string& gate : gates) {
    if (had.count(gate) == 0) {
      causes.push_back(
          {"FieldValueForbidden",
           StrCat("Forbidden: only deletion is allowed, but found new scheduling gate '", gate,
                  "'"),
           "spec.schedulingGates"});
    }
  }
  return causes;
}

}  // namespace canhazgpu::kubesim
