#include "kubesim/workloads.h"

#include "absl/strings/ascii.h"
#include "core/strings.h"
#include "kube/json_object.h"
#include "kube/label_selector.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

bool IsApps(const ResourceType& type) {
  return type.group == "apps" &&
         (type.kind == "Deployment" || type.kind == "ReplicaSet" || type.kind == "DaemonSet");
}
bool IsJob(const ResourceType& type) { return type.group == "batch" && type.kind == "Job"; }

void SetIfAbsent(json& object, const char* key, const json& value) {
  if (!object.contains(key) || object[key].is_null()) object[key] = value;
}

// The object member `key` of `parent`, made when absent or null; nullptr
// when it holds something else (the schema check refuses that later).
json* ObjectMember(json* parent, const char* key) {
  if (parent == nullptr || !parent->is_object()) return nullptr;
  json& member = (*parent)[key];
  if (member.is_null()) member = json::object();
  return member.is_object() ? &member : nullptr;
}

// How Go's %#v prints a map[string]string, which the server's message shows.
std::string GoMapText(const json& labels) {
  std::string out = "map[string]string{";
  bool first = true;
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      out += StrCat(first ? "" : ", ", json(key).dump(), ":",
                    value.is_string() ? value.dump() : "\"\"");
      first = false;
    }
  }
  return out + "}";
}

void DefaultJob(json& object) {
  json& spec = object["spec"];
  if (!spec.is_object()) return;
  const bool no_completions = !spec.contains("completions") || spec["completions"].is_null();
  const bool no_parallelism = !spec.contains("parallelism") || spec["parallelism"].is_null();
  if (no_completions && no_parallelism) spec["completions"] = 1;
  SetIfAbsent(spec, "parallelism", 1);
  SetIfAbsent(spec, "backoffLimit", 6);
  SetIfAbsent(spec, "completionMode", "NonIndexed");
  SetIfAbsent(spec, "suspend", false);
  SetIfAbsent(spec, "podReplacementPolicy", "TerminatingOrFailed");
  if (spec.value("manualSelector", json()) == true) return;
  // The Job controller's labels, from the Job's own uid, so that no other
  // Job's pods can ever match (generateSelector in the job strategy).
  const std::string uid = kube::StringAt(object, "/metadata/uid"_json_pointer);
  const std::string name = kube::StringAt(object, "/metadata/name"_json_pointer);
  spec["selector"] = {{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}};
  json* labels = ObjectMember(ObjectMember(ObjectMember(&spec, "template"), "metadata"), "labels");
  if (labels == nullptr) return;
  (*labels)["batch.kubernetes.io/controller-uid"] = uid;
  (*labels)["batch.kubernetes.io/job-name"] = name;
  (*labels)["controller-uid"] = uid;
  (*labels)["job-name"] = name;
}

void DefaultApps(const ResourceType& type, json& object) {
  json& spec = object["spec"];
  if (!spec.is_object()) return;
  if (type.kind != "DaemonSet") SetIfAbsent(spec, "replicas", 1);
  if (type.kind != "ReplicaSet") SetIfAbsent(spec, "revisionHistoryLimit", 10);
  if (type.kind == "Deployment") {
    SetIfAbsent(spec, "progressDeadlineSeconds", 600);
    SetIfAbsent(spec, "strategy", {{"type", "RollingUpdate"}});
    json& strategy = spec["strategy"];
    if (strategy.is_object() && strategy.value("type", json()) == "RollingUpdate") {
      SetIfAbsent(strategy, "rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}});
    }
  } else if (type.kind == "DaemonSet") {
    SetIfAbsent(
        spec, "updateStrategy",
        {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 1}, {"maxSurge", 0}}}});
  }
}

}  // namespace

void DefaultWorkload(const ResourceType& type, json& object) {
  if (!IsApps(type) && !IsJob(type)) return;
  if (!object.is_object() || !object.value("spec", json()).is_object()) return;
  if (IsJob(type)) DefaultJob(object);
  if (IsApps(type)) DefaultApps(type, object);
  json* template_spec = ObjectMember(ObjectMember(&object["spec"], "template"), "spec");
  if (template_spec != nullptr) SetIfAbsent(*template_spec, "restartPolicy", "Always");
}

std::vector<kube::StatusCause> CheckWorkload(const ResourceType& type, const json& object) {
  std::vector<kube::StatusCause> causes;
  if (!IsApps(type) && !IsJob(type)) return causes;
  const json spec = object.value("spec", json::object());
  if (!spec.is_object()) return causes;
  const json selector = spec.value("selector", json());
  const json labels = spec.value("/template/metadata/labels"_json_pointer, json::object());
  // (A missing selector is the schema's finding: required.)
  if (!selector.is_object()) {
    // nothing to compare
  } else if (selector.value("matchLabels", json::object()).empty() &&
             selector.value("matchExpressions", json::array()).empty()) {
    causes.push_back({"FieldValueInvalid",
                      StrCat("Invalid value: \"\": empty selector is invalid for ",
                             absl::AsciiStrToLower(type.kind)),
                      "spec.selector"});
  } else if (!kube::SelectsLabels(selector, labels)) {
    causes.push_back({"FieldValueInvalid",
                      StrCat("Invalid value: ", GoMapText(labels),
                             ": `selector` does not match template `labels`"),
                      "spec.template.metadata.labels"});
  }
  if (IsJob(type)) {
    const std::string restart = kube::StringAt(spec, "/template/spec/restartPolicy"_json_pointer);
    if (restart != "OnFailure" && restart != "Never") {
      causes.push_back({"FieldValueNotSupported",
                        StrCat("Unsupported value: \"", restart,
                               "\": supported values: \"OnFailure\", \"Never\""),
                        "spec.template.spec.restartPolicy"});
    }
    if (spec.value("completionMode", "") == "Indexed" &&
        !spec.value("completions", json()).is_number_integer()) {
      causes.push_back({"FieldValueRequired", "Required value: when completion mode is Indexed",
                        "spec.completions"});
    }
  } else if (kube::StringAt(spec, "/template/spec/restartPolicy"_json_pointer) != "Always") {
    causes.push_back({"FieldValueNotSupported",
                      StrCat("Unsupported value: \"",
                             kube::StringAt(spec, "/template/spec/restartPolicy"_json_pointer),
                             "\": supported values: \"Always\""),
                      "spec.template.spec.restartPolicy"});
  }
  return causes;
}

}  // namespace canhazgpu::kubesim
