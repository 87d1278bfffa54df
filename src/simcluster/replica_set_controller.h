// The ReplicaSet controller of kube-controller-manager, as far as the
// simulated cluster needs it: a ReplicaSet keeps spec.replicas active pods
// made from its template (generateName "<replicaset>-", controlled by it),
// creating the missing ones and deleting the extra ones (those not yet on
// a node first, then those not ready, then the youngest), and reports
// replicas, fullyLabeledReplicas, readyReplicas, availableReplicas (Ready
// for minReadySeconds) and observedGeneration. Not emulated: adoption of
// orphans, the slow start of large batches, the ReplicaFailure condition.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include "clusterview/view.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {

class ReplicaSetController {
 public:
  explicit ReplicaSetController(WorkloadWriter& writer) : writer_(writer) {}

  void Sync(clusterview::View& view, const KindInPass& replica_sets);

 private:
  void SyncOne(clusterview::View& view, const KindInPass& replica_sets,
               const nlohmann::json& replica_set);

  WorkloadWriter& writer_;
};

}  // namespace canhazgpu::simcluster
