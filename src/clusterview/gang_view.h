// Multi-node runs (ADR 0019) as one item: the ranks of one run are an
// Indexed Job's pods with k8shazgpu's run label, and `queue` and `explain`
// speak of the run, not of each rank - "needs 2 nodes ...: node-0 could
// hold a rank, node-1 has none free (gpu-3 taken by ...)". Pure functions of a View;
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "clusterview/explain.h"
#include "clusterview/view.h"
#include "core/clock.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

// The Job a rank belongs to: the controlling Job of a pod that has a
// completion index and the run label; "" for any other pod.
std::string GangJobOf(const nlohmann::json& pod);

// A rank's index (batch.kubernetes.io/job-completion-index), or -1.
int GangRankOf(const nlohmann::json& pod);

// The not-yet-placed ranks of `job` in namespace `ns`, by rank.
std::vector<nlohmann::json> PendingRanks(const View& view, const std::string& ns,
                                         const std::string& job);

// Why a run's `pending` ranks (by rank, at least one) wait: rank 0's
// diagnosis, its summary the gang's - how many nodes could hold a rank now,
// each node said with its reason when it cannot ("needs 2 nodes with a
// rank's devices free at once; 1 has: node-0 could hold a rank, node-1 has
// none free (gpu-3 taken by bob)").
Diagnosis ExplainGang(const View& view, const std::string& job,
                      const std::vector<nlohmann::json>& pending, TimePoint now);

}  // namespace canhazgpu::clusterview
