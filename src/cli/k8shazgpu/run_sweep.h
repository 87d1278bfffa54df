// The sweep of finished runs nobody followed to their end (issue 33): a
// detached run's pod carries kTtlAnnotation, and once it has been finished
// that long, the next run, reserve or vllm run of its user deletes it (the
// garbage collector takes its template, claim and ConfigMaps, which the
// pod owns). Kubernetes' ttlSecondsAfterFinished exists for Jobs only; a
// bare pod has nothing like it, so the CLI is the controller. Runs and
// reservations that are still going, pods without the annotation (--keep,
// other tools') and other users' runs are never touched.
// ExpiredRuns is pure; SweepExpiredRuns talks to the API. One thread.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// When the pod's main work ended: the latest finishedAt of its
// containers, else (a pod that failed before starting) the time of its
// last condition; nullopt while it has not finished.
std::optional<TimePoint> FinishedAt(const nlohmann::json& pod);

// The names of `pods` (as listed) that are finished and whose TTL has
// passed at `now`.
std::vector<std::string> ExpiredRuns(const std::vector<nlohmann::json>& pods, TimePoint now);

// Deletes `user`'s expired runs in `ns`; the names deleted. Errors are
// returned for the caller to mention and ignore: a sweep never stops a run.
absl::StatusOr<std::vector<std::string>> SweepExpiredRuns(kube::Client& client,
                                                          const std::string& ns,
                                                          const std::string& user, TimePoint now);

}  // namespace canhazgpu::cli::k8s
