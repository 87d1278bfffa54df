#include "cli/k8shazgpu/run_sweep.h"

#include "cli/k8shazgpu/run_objects.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

std::optional<TimePoint> FinishedAt(const json& pod) {
  const std::string phase = kube::StringAt(pod, "/status/phase"_json_pointer);
  if (phase != "Succeeded" && phase != "Failed") return std::nullopt;
  std::optional<TimePoint> latest;
  auto consider = [&](std::optional<TimePoint> t) {
    if (t && (!latest || *t > *latest)) latest = t;
  };
  for (const json& c : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
    consider(kube::TimeAt(c, "/state/terminated/finishedAt"_json_pointer));
  }
  if (latest) return latest;
  // Failed before a container ran (a deadline, an eviction): when its
  // conditions last changed, else when it was made.
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    consider(kube::TimeAt(c, "/lastTransitionTime"_json_pointer));
  }
  if (latest) return latest;
  return kube::TimeAt(pod, "/metadata/creationTimestamp"_json_pointer);
}

std::vector<std::string> ExpiredRuns(const std::vector<json>& pods, TimePoint now) {
  std::vector<std::string> out;
  for (const json& pod : pods) {
    const std::string ttl_text = kube::StringField(
        pod.value("/metadata/annotations"_json_pointer, json::object()), kTtlAnnotation);
    int64_t ttl = 0;
    if (ttl_text.empty() || !ParseInt(ttl_text, &ttl) || ttl < 0) continue;
    std::optional<TimePoint> finished = FinishedAt(pod);
    if (!finished || now - *finished < std::chrono::seconds(ttl)) continue;
    out.push_back(kube::StringAt(pod, "/metadata/name"_json_pointer));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> SweepExpiredRuns(kube::Client& client,
                                                          const std::string& ns,
                                                          const std::string& user, TimePoint now) {
  ASSIGN_OR_RETURN(json list,
                   client.ListAll(kube::kPods, ns,
                                  {.label_selector = StrCat(kRunLabel, ",", kUserLabel, "=",
                                                            UserLabelValue(user))}));
  std::vector<std::string> deleted;
  for (const std::string& name : ExpiredRuns(list["items"].get<std::vector<json>>(), now)) {
    absl::Status s = client.Delete(kube::kPods, ns, name);
    if (!s.ok() && !kube::IsApiNotFound(s)) return s;
    if (s.ok()) deleted.push_back(name);
  }
  return deleted;
}

}  // namespace canhazgpu::cli::k8s
