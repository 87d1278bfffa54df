#include "kubesim/pod_groups.h"

#include <memory>
#include <utility>

#include "core/strings.h"

namespace canhazgpu::kubesim {

using nlohmann::json;

namespace {

json PodGroupSchema() {
  const json preserve = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  const json text = {{"type", "string"}};
  const json int32 = {{"type", "integer"}, {"format", "int32"}};
  const json policy = {{"type", "object"},
                       {"properties",
                        {{"basic", {{"type", "object"}, {"properties", json::object()}}},
                         {"gang",
                          {{"type", "object"},
                           {"required", {"minCount"}},
                           {"properties", {{"minCount", int32}}}}}}}};
  const json claim = {
      {"type", "object"},
      {"required", {"name"}},
      {"properties",
       {{"name", text}, {"resourceClaimName", text}, {"resourceClaimTemplateName", text}}}};
  const json spec = {
      {"type", "object"},
      {"required", {"schedulingPolicy"}},
      {"properties",
       {{"schedulingPolicy", policy},
        {"podGroupTemplateRef", preserve},
        {"disruptionMode", {{"type", "string"}, {"enum", {"Single", "All"}}}},
        {"priorityClassName", text},
        {"priority", int32},
        {"preemptionPolicy", {{"type", "string"}, {"enum", {"Never", "PreemptLowerPriority"}}}},
        {"parentCompositePodGroupName", text},
        {"resourceClaims", {{"type", "array"}, {"items", claim}}}}}};
  const json status = {{"type", "object"},
                       {"properties",
                        {{"conditions", {{"type", "array"}, {"items", preserve}}},
                         {"resourceClaimStatuses", {{"type", "array"}, {"items", preserve}}}}}};
  return {{"type", "object"},
          {"properties",
           {{"apiVersion", {{"x-kubernetes-preserve-unknown-fields", true}}},
            {"kind", {{"x-kubernetes-preserve-unknown-fields", true}}},
            {"metadata", {{"x-kubernetes-preserve-unknown-fields", true}}},
            {"spec", spec},
            {"status", status}}}};
}

// Where `type`'s objects hold a pod spec.
const char* PodSpecPath(const ResourceType& type) {
  if (type.group.empty() && type.resource == "pods") return "/spec";
  if ((type.group == "batch" && type.resource == "jobs") ||
      (type.group == "apps" && (type.resource == "deployments" || type.resource == "replicasets" ||
                                type.resource == "daemonsets"))) {
    return "/spec/template/spec";
  }
  return nullptr;
}

std::string FieldPath(const json::json_pointer& at) {
  const std::string pointer = at.to_string();  // Split's views point into it
  std::string out;
  for (std::string_view part : Split(pointer, '/', /*skip_empty=*/true))
    out += StrCat(out.empty() ? "" : ".", part);
  return out;
}

// The policy a PodGroup chose: "basic", "gang", or "" (none or both).
std::string PolicyOf(const json& group) {
  const json policy = group.value("/spec/schedulingPolicy"_json_pointer, json::object());
  const bool basic = policy.is_object() && policy.contains("basic");
  const bool gang = policy.is_object() && policy.contains("gang");
  if (basic == gang) return "";
  return basic ? "basic" : "gang";
}

std::vector<kube::StatusCause> CheckPodGroup(const json& group, const json* old) {
  std::vector<kube::StatusCause> causes;
  const std::string policy = PolicyOf(group);
  if (policy.empty()) {
    causes.push_back({"FieldValueRequired",
                      "Required value: exactly one of `basic` or `gang` must be set",
                      "spec.schedulingPolicy"});
  }
  const json min = group.value("/spec/schedulingPolicy/gang/minCount"_json_pointer, json());
  if (policy == "gang" && min.is_number_integer() && min.get<int64_t>() < 1) {
    causes.push_back({"FieldValueInvalid",
                      StrCat("Invalid value: ", min.dump(), ": must be greater than zero"),
                      "spec.schedulingPolicy.gang.minCount"});
  }
  if (old != nullptr && !policy.empty() && PolicyOf(*old) != policy) {
    causes.push_back(
        {"FieldValueInvalid", "Invalid value: field is immutable", "spec.schedulingPolicy"});
  }
  return causes;
}

}  // namespace

ResourceType PodGroupType() {
  return {.group = "scheduling.k8s.io",
          .version = "v1beta1",
          .resource = "podgroups",
          .singular = "podgroup",
          .kind = "PodGroup",
          .namespaced = true,
          .has_status = true,
          .schema = std::make_shared<const json>(PodGroupSchema())};
}

std::vector<HeldSchedulingGroup> TakeSchedulingGroups(const ResourceType& type, json& object) {
  std::vector<HeldSchedulingGroup> held;
  const char* spec = PodSpecPath(type);
  if (spec == nullptr) return held;
  const json::json_pointer spec_at(spec);
  if (!object.contains(spec_at) || !object[spec_at].is_object()) return held;
  json& pod_spec = object[spec_at];
  if (!pod_spec.contains("schedulingGroup")) return held;
  held.push_back({spec_at / "schedulingGroup", pod_spec["schedulingGroup"]});
  pod_spec.erase("schedulingGroup");
  return held;
}

void PutBackSchedulingGroups(json& object, std::vector<HeldSchedulingGroup> held) {
  for (HeldSchedulingGroup& h : held) {
    if (!h.value.is_null()) object[h.at] = std::move(h.value);
  }
}

std::vector<kube::StatusCause> CheckGenericWorkload(const ResourceType& type, const json& object,
                                                    const std::vector<HeldSchedulingGroup>& held,
                                                    const json* old) {
  if (type.group == "scheduling.k8s.io" && type.resource == "podgroups")
    return CheckPodGroup(object, old);
  std::vector<kube::StatusCause> causes;
  for (const HeldSchedulingGroup& h : held) {
    if (h.value.is_null()) continue;
    const std::string field = FieldPath(h.at);
    const json name = h.value.is_object() ? h.value.value("podGroupName", json()) : json();
    if (!h.value.is_object()) {
      causes.push_back({"FieldValueTypeInvalid",
                        StrCat("Invalid value: ", h.value.dump(), ": must be an object"), field});
    } else if (!name.is_string() || name.get<std::string>().empty()) {
      causes.push_back({"FieldValueRequired", "Required value", field + ".podGroupName"});
    }
  }
  // A pod's group is fixed once the pod exists (a template's may change).
  if (old != nullptr && type.group.empty() && type.resource == "pods") {
    const json before = old->value("/spec/schedulingGroup"_json_pointer, json());
    const json after = held.empty() ? json() : held.front().value;
    if (before != after) {
      causes.push_back(
          {"FieldValueInvalid", "Invalid value: field is immutable", "spec.schedulingGroup"});
    }
  }
  return causes;
}

}  // namespace canhazgpu::kubesim
