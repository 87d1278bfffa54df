// The resourceclaim controller of kube-controller-manager, as far as the
// simulated cluster needs it: for each spec.resourceClaims entry of a pod
// with resourceClaimTemplateName it creates the claim from the template
// (generateName "<pod>-<entry>-", annotation
// resource.kubernetes.io/pod-claim-name, owned by the pod with controller
// and blockOwnerDeletion, labels, annotations and spec from the template)
// and records its name in the pod's status.resourceClaimStatuses. It drops
// pods that are gone, done, or deleted before they ran from the claims'
// status.reservedFor, and deallocates a claim nobody reserves any more
// (status.allocation and status.devices cleared, the scheduler's
// delete-protection finalizer removed), which also lets the garbage
// collector finish deleting the generated claims of a deleted pod.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <functional>
#include <string>

#include "clusterview/view.h"
#include "kube/client.h"
#include "simcluster/overlay.h"

namespace canhazgpu::simcluster {

// The finalizer the scheduler puts on the claims it allocates.
inline constexpr char kDeleteProtectionFinalizer[] = "resource.kubernetes.io/delete-protection";

class ClaimController {
 public:
  ClaimController(kube::Client& client, Overlay& pods, Overlay& claims,
                  std::function<void(const std::string&)> log)
      : client_(client), pods_(pods), claims_(claims), log_(std::move(log)) {}

  // Both steps over `view`, which is updated with what was written. A
  // write that fails (a conflict: the object changed) is logged and left
  // for the next pass, which the change itself triggers.
  void Sync(clusterview::View& view);

 private:
  void CreateTemplateClaims(clusterview::View& view, const nlohmann::json& pod);
  void ReleaseClaim(clusterview::View& view, const nlohmann::json& claim);

  kube::Client& client_;
  Overlay& pods_;
  Overlay& claims_;
  std::function<void(const std::string&)> log_;
};

}  // namespace canhazgpu::simcluster
