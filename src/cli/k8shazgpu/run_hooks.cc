#include "cli/k8shazgpu/run_hooks.h"

#include "clusterview/explain.h"
#include "clusterview/load.h"
#include "core/strings.h"

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

RunHooks DefaultRunHooks(const Clock& clock) {
  return RunHooks{
      // The allocator's explanation over the whole cluster, which names
      // holders, local users and taints; the scheduler's own message when
      // the cluster cannot be read (a user allowed only their namespace).
      .why_pending =
          [&clock](kube::Client& client, const json& pod) {
            absl::StatusOr<clusterview::View> view = clusterview::LoadView(client);
            if (!view.ok()) return PodScheduledMessage(pod);
            return clusterview::ExplainPod(*view, pod, clock.Now()).summary;
          },
      // A request no device in the cluster could ever satisfy fails before
      // anything is created. Not being allowed to read the cluster is not a
      // reason to refuse: the scheduler will tell.
      .check_claim = [&clock](kube::Client& client, const std::string& ns,
                              const json& claim_spec) -> absl::Status {
        absl::StatusOr<clusterview::View> view = clusterview::LoadView(client);
        if (!view.ok()) return absl::OkStatus();
        absl::StatusOr<clusterview::Diagnosis> diagnosis =
            clusterview::ExplainClaimSpec(*view, claim_spec, ns, clock.Now());
        if (!diagnosis.ok()) return diagnosis.status();
        if (!diagnosis->never) return absl::OkStatus();
        // The summary names every node's lack; `explain` would add the
        // allocator's counts, but there is nothing to explain it on.
        return absl::FailedPreconditionError(StrCat(diagnosis->summary, "; nothing was created"));
      },
  };
}

}  // namespace canhazgpu::cli::k8s
