// The Deployment controller of kube-controller-manager, as far as the
// simulated cluster needs it: a Deployment runs its pods through
// ReplicaSets named "<deployment>-<pod-template-hash>", one per template
// it has had (the hash is added to the ReplicaSet's selector and its pods'
// labels, the revision to its annotations). A new template gets a new
// ReplicaSet, and the strategy moves the replicas over:
//   - RollingUpdate: the new ReplicaSet grows while all of them hold at
//     most replicas + maxSurge, and the old ones shrink while at least
//     replicas - maxUnavailable pods stay available (unhealthy old pods
//     first), as the real controller's reconcileNewReplicaSet and
//     reconcileOldReplicaSets do;
//   - Recreate: the old ReplicaSets go to zero, and the new one is scaled
//     up once none of their pods is left running.
// It reports replicas, updatedReplicas, readyReplicas, availableReplicas,
// unavailableReplicas, observedGeneration and the Available and
// Progressing conditions, which `kubectl rollout status` reads. A paused
// Deployment only reports. Not emulated: progressDeadlineSeconds,
// revisionHistoryLimit's cleanup of old ReplicaSets, rollback, adoption of
// orphans, proportional scaling during a rollout.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include "clusterview/view.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {

class DeploymentController {
 public:
  explicit DeploymentController(WorkloadWriter& writer) : writer_(writer) {}

  void Sync(clusterview::View& view, const KindInPass& deployments, const KindInPass& replica_sets);

 private:
  void SyncOne(clusterview::View& view, const KindInPass& deployments,
               const KindInPass& replica_sets, const nlohmann::json& deployment);
  // The ReplicaSet for the deployment's current template, made with
  // `replicas`; nullopt when the write failed.
  std::optional<nlohmann::json> CreateNewReplicaSet(const KindInPass& replica_sets,
                                                    const nlohmann::json& deployment,
                                                    const std::vector<nlohmann::json>& owned,
                                                    int64_t replicas);
  void Scale(const KindInPass& replica_sets, nlohmann::json& replica_set, int64_t replicas);
  // One step of the RollingUpdate strategy: the new ReplicaSet (`new_rs`,
  // made when missing) grows by at most maxSurge over `replicas`, and the
  // `old` ones (oldest first) shrink as far as maxUnavailable allows.
  void RollUpdate(const KindInPass& replica_sets, const nlohmann::json& deployment,
                  const std::vector<nlohmann::json>& owned, const nlohmann::json& strategy,
                  std::optional<nlohmann::json>& new_rs, std::vector<nlohmann::json>& old);
  void WriteStatus(const KindInPass& deployments, const nlohmann::json& deployment,
                   const std::vector<nlohmann::json>& owned, const nlohmann::json* new_rs);

  WorkloadWriter& writer_;
};

}  // namespace canhazgpu::simcluster
