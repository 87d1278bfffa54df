#include "cli/k8shazgpu/run_hooks.h"

#include <algorithm>

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

namespace {

// Whether the claim fits on some node now (on `node` when one is named).
bool FitsNow(const clusterview::Diagnosis& diagnosis, const std::string& node) {
  return std::any_of(diagnosis.nodes.begin(), diagnosis.nodes.end(),
                     [&](const clusterview::NodeDiagnosis& n) {
                       return n.fits && (node.empty() || n.node == node);
                     });
}

}  // namespace

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
      .check_claim = [&clock](kube::Client& client, const std::string& ns, const json& claim_spec,
                              const RunRequest& request) -> absl::Status {
        absl::StatusOr<clusterview::View> view = clusterview::LoadView(client);
        // --nonblock then rests on the scheduler alone (Follow's bound).
        if (!view.ok()) return absl::OkStatus();
        absl::StatusOr<clusterview::Diagnosis> diagnosis =
            clusterview::ExplainClaimSpec(*view, claim_spec, ns, clock.Now());
        if (!diagnosis.ok()) return diagnosis.status();
        if (diagnosis->never) {
          // The summary names every node's lack; `explain` would add the
          // allocator's counts, but there is nothing to explain it on.
          return absl::FailedPreconditionError(StrCat(diagnosis->summary, "; nothing was created"));
        }
        if (request.nonblock && !FitsNow(*diagnosis, request.node)) {
          return absl::ResourceExhaustedError(
              StrCat("not free now (--nonblock): ", diagnosis->summary, "; nothing was created"));
        }
        return absl::OkStatus();
      },
  };
}

}  // namespace canhazgpu::cli::k8s
