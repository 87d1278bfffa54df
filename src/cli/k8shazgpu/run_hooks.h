// The two places where `run` asks the cluster-wide read model: why a pod
// waits (shown while it is pending) and whether a claim could ever be
// satisfied (asked before anything is created). DefaultRunHooks() answers
// both with clusterview's ExplainPod and ExplainClaimSpec over the cluster
// read afresh; tests may pass others. `vllm run` also builds its own pod.
// Hooks are called from the command's thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/k8shazgpu/run_objects.h"
#include "core/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Why `pod` (as last seen) is not running yet, in a few lines; "" when
// nothing is known. Called at most about twice a second while it waits.
using PendingReason = std::function<std::string(kube::Client&, const nlohmann::json& pod)>;

// Called with the claim spec about to be created in `ns` for `request`. A
// non-OK status stops the run before anything exists: FailedPrecondition
// (exit 1) for "no device in the cluster could ever satisfy this", with
// the reason; with request.nonblock, ResourceExhausted (exit 3) when it
// does not fit on any node (request.node's, when set) now.
using ClaimCheck =
    std::function<absl::Status(kube::Client&, const std::string& ns,
                               const nlohmann::json& claim_spec, const RunRequest& request)>;

// The pod to create under `names`, and the ConfigMaps it mounts (created
// before it, labelled as the run, owned by it once it exists). Called once
// the claim check passed and before anything is created: it may wait
// (vllm run waits for the node caches) and may fail, which creates
// nothing. Unset: PodObject(request, names) alone.
struct PodPlan {
  nlohmann::json pod;
  std::vector<nlohmann::json> config_maps;
  // Lines for stderr once the pod exists (what it carries), each ending in
  // a newline; a run that fails before says only why.
  std::string created_note;
};
using PodBuilder = std::function<absl::StatusOr<PodPlan>(const RunNames& names)>;

struct RunHooks {
  PendingReason why_pending;
  ClaimCheck check_claim;
  PodBuilder build_pod;
};

// What run uses; `clock` (for "held since") must outlive the hooks.
RunHooks DefaultRunHooks(const Clock& clock);

// The message of the pod's PodScheduled=False condition ("0/2 nodes are
// available: ..."), or "".
std::string PodScheduledMessage(const nlohmann::json& pod);

}  // namespace canhazgpu::cli::k8s
