#include "cli/k8shazgpu/run_hooks.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

std::string PodScheduledMessage(const json& pod) {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
      return c.value("message", c.value("reason", ""));
    }
  }
  return "";
}

RunHooks DefaultRunHooks() {
  return RunHooks{
      // TODO(issue 17): clusterview::ExplainPod over a View of the cluster.
      .why_pending = [](kube::Client&, const json& pod) { return PodScheduledMessage(pod); },
      // TODO(issue 17): clusterview::ExplainClaimSpec; `never` -> FailedPrecondition.
      .check_claim = [](kube::Client&, const std::string&,
                        const json&) { return absl::OkStatus(); },
  };
}

}  // namespace canhazgpu::cli::k8s
