// The Job controller of kube-controller-manager, as far as the simulated
// cluster needs it. A Job runs pods made from its template (controlled by
// it) until enough succeed:
//   - NonIndexed: up to spec.parallelism at once, until spec.completions
//     pods have succeeded (without completions: until one has, and none
//     runs any more);
//   - Indexed: one pod per index 0 … completions-1 (generateName
//     "<job>-<index>-", annotation and label
//     batch.kubernetes.io/job-completion-index, hostname "<job>-<index>",
//     JOB_COMPLETION_INDEX in every container from that annotation), lowest
//     missing index first, until every index has succeeded; status says
//     which in completedIndexes ("0-2,4");
//   - every pod labelled batch.kubernetes.io/job-name, job-name and
//     (batch.kubernetes.io/)controller-uid, as the API server defaults a
//     Job's template;
// It fails when more pods failed (plus container restarts, for
// restartPolicy OnFailure) than spec.backoffLimit allows, or when it ran
// longer than activeDeadlineSeconds; a failing or finished Job's running
// pods are deleted. Finished, it gets the conditions a 1.34 controller
// writes (SuccessCriteriaMet then Complete, FailureTarget then Failed) and
// completionTime; ttlSecondsAfterFinished deletes it (at the next pass
// after it is due). spec.suspend deletes its running pods and says
// Suspended. Status also reports active, ready, terminating, succeeded,
// failed, startTime. Not emulated: the back-off delay between failed pods,
// podFailurePolicy, successPolicy, backoffLimitPerIndex, the job-tracking
// finalizer (a deleted finished pod still counts: counts never go down).
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <set>
#include <string>

#include "clusterview/view.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {

inline constexpr char kJobCompletionIndex[] = "batch.kubernetes.io/job-completion-index";

// completedIndexes as the API writes it ("0-2,4") and back; bad parts of
// the text are skipped.
std::set<int64_t> ParseIndexSet(const std::string& text);
std::string IndexSetText(const std::set<int64_t>& indexes);

class JobController {
 public:
  JobController(kube::Client& client, WorkloadWriter& writer) : client_(client), writer_(writer) {}

  void Sync(clusterview::View& view, const KindInPass& jobs);

 private:
  void SyncOne(clusterview::View& view, const KindInPass& jobs, const nlohmann::json& job);
  void CreatePod(clusterview::View& view, const nlohmann::json& job, std::optional<int64_t> index);
  void DeleteIfExpired(const nlohmann::json& job);
  // Creates the pods the Job lacks and deletes those over its parallelism.
  void Scale(clusterview::View& view, const nlohmann::json& job, int64_t succeeded,
             const std::set<int64_t>& completed, std::vector<nlohmann::json> active);

  kube::Client& client_;
  WorkloadWriter& writer_;
};

}  // namespace canhazgpu::simcluster
