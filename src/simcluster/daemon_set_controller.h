// The DaemonSet controller of kube-controller-manager, as far as the
// simulated cluster needs it: one pod of the DaemonSet's template on every
// node where such a pod may run (its nodeSelector and node affinity, the
// node's NoSchedule and NoExecute taints against its tolerations plus the
// ones every daemon pod gets), none elsewhere. Each pod is pinned to its
// node with required node affinity on metadata.name (the scheduler binds
// it) and labelled with controller-revision-hash and
// pod-template-generation. A new template replaces the pods: with
// RollingUpdate, old pods are deleted while fewer than maxUnavailable are
// unavailable; with OnDelete, only when someone deletes them. It reports
// the DaemonSet status that `kubectl get ds` and `kubectl rollout status`
// read. Not emulated: maxSurge, ControllerRevision objects, adoption of
// orphans, a failed pod's back-off.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <string>

#include "clusterview/view.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {

class DaemonSetController {
 public:
  explicit DaemonSetController(WorkloadWriter& writer) : writer_(writer) {}

  void Sync(clusterview::View& view, const KindInPass& daemon_sets);

 private:
  void SyncOne(clusterview::View& view, const KindInPass& daemon_sets,
               const nlohmann::json& daemon_set);

  WorkloadWriter& writer_;
};

// The node a daemon pod is for: spec.nodeName once bound, before that the
// node its required affinity names.
std::string DaemonPodNode(const nlohmann::json& pod);

}  // namespace canhazgpu::simcluster
