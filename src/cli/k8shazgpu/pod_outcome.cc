#include "cli/k8shazgpu/pod_outcome.h"

#include "cli/k8shazgpu/run_objects.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

json MainContainerStatus(const json& pod) {
  for (const json& s : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
    if (s.value("name", "") == kContainerName) return s;
  }
  return nullptr;
}

PodStage StageOf(const json& pod) {
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  const json main = MainContainerStatus(pod);
  if (main.is_object() && main.contains("/state/terminated"_json_pointer)) {
    return PodStage::kFinished;
  }
  if (phase == "Succeeded" || phase == "Failed") return PodStage::kFinished;
  if (main.is_object() && main.contains("/state/running"_json_pointer)) return PodStage::kRunning;
  if (pod.value("/spec/nodeName"_json_pointer, std::string()).empty()) return PodStage::kPending;
  return PodStage::kScheduled;
}

PodOutcome OutcomeOf(const json& pod, const std::string& prepare_error) {
  const std::string name = pod.value("/metadata/name"_json_pointer, std::string());
  const std::string reason = pod.value("/status/reason"_json_pointer, std::string());
  const std::string message = pod.value("/status/message"_json_pointer, std::string());
  const json main = MainContainerStatus(pod);
  if (main.is_object() && main.contains("/state/terminated"_json_pointer)) {
    const json& t = main["state"]["terminated"];
    PodOutcome out;
    const int sig = t.value("signal", 0);
    out.exit_code = sig > 0 ? 128 + sig : t.value("exitCode", 1);
    // A deadline ends a running container too: say so beside its code.
    if (reason == "DeadlineExceeded")
      out.message = StrCat("pod ", name, ": ", reason, ": ", message);
    return out;
  }
  std::string why;
  if (!prepare_error.empty()) {
    why = prepare_error;
  } else if (!reason.empty() || !message.empty()) {
    why = Join(std::vector<std::string>{reason, message}, ": ");
    if (reason.empty()) why = message;
    if (message.empty()) why = reason;
  } else if (main.is_object() && main.contains("/state/waiting"_json_pointer)) {
    const json& w = main["state"]["waiting"];
    why = StrCat(w.value("reason", ""), w.contains("message") ? ": " : "", w.value("message", ""));
  } else {
    why = StrCat("phase ", pod.value("/status/phase"_json_pointer, std::string("unknown")));
  }
  return PodOutcome{.exit_code = 1, .message = StrCat("pod ", name, " never ran: ", why)};
}

}  // namespace canhazgpu::cli::k8s
