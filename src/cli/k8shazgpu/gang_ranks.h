// A multi-node run's ranks as the API shows them: the run's pods (by its
// label), ordered by the Job's completion index, and what the gang's
// admission and its end need from them. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// The rank of a Job's pod (batch.kubernetes.io/job-completion-index), or -1.
int RankOf(const nlohmann::json& pod);

// The pods of `list` (a PodList's items) that are not being deleted, by
// rank; a rank with two pods (a replacement) keeps the newer.
std::vector<nlohmann::json> CurrentRanks(const std::vector<nlohmann::json>& pods);

// Whether every one of `n` ranks exists and its claims have been made (the
// fit check needs them).
bool AllRanksWithClaims(const std::vector<nlohmann::json>& ranks, int n);

// Whether the pod still waits behind `gate`.
bool HasGate(const nlohmann::json& pod, const std::string& gate);

// The run's end from its ranks: nullopt while one is still running and
// none has failed; otherwise the exit code (0: all succeeded) and, for a
// failure, one line naming the first rank that failed (by when its
// container ended), its node and why.
struct GangOutcome {
  int exit_code = 0;
  std::string message;
};
std::optional<GangOutcome> OutcomeOfRanks(const std::vector<nlohmann::json>& ranks, int n);

}  // namespace canhazgpu::cli::k8s
