#include "cli/k8shazgpu/gang_ranks.h"

#include <algorithm>
#include <map>

#include "cli/k8shazgpu/pod_outcome.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

int RankOf(const json& pod) {
  const json annotations = pod.value("/metadata/annotations"_json_pointer, json::object());
  int64_t rank = -1;
  if (!annotations.is_object() ||
      !ParseInt(kube::StringField(annotations, "batch.kubernetes.io/job-completion-index"),
                &rank) ||
      rank < 0 || rank > 1'000'000) {
    return -1;
  }
  return static_cast<int>(rank);
}

std::vector<json> CurrentRanks(const std::vector<json>& pods) {
  std::map<int, json> by_rank;
  for (const json& pod : pods) {
    const int rank = RankOf(pod);
    if (rank < 0 || !kube::StringAt(pod, "/metadata/deletionTimestamp"_json_pointer).empty())
      continue;
    auto [it, inserted] = by_rank.emplace(rank, pod);
    const std::string created = kube::StringAt(pod, "/metadata/creationTimestamp"_json_pointer);
    if (!inserted &&
        created > kube::StringAt(it->second, "/metadata/creationTimestamp"_json_pointer))
      it->second = pod;
  }
  std::vector<json> out;
  for (auto& [rank, pod] : by_rank) out.push_back(std::move(pod));
  return out;
}

bool AllRanksWithClaims(const std::vector<json>& ranks, int n) {
  if (static_cast<int>(ranks.size()) != n) return false;
  for (const json& pod : ranks) {
    const json wanted = pod.value("/spec/resourceClaims"_json_pointer, json::array());
    const json made = pod.value("/status/resourceClaimStatuses"_json_pointer, json::array());
    if (!wanted.is_array() || !made.is_array() || made.size() < wanted.size()) return false;
  }
  return true;
}

bool HasGate(const json& pod, const std::string& gate) {
  const json gates = pod.value("/spec/schedulingGates"_json_pointer, json::array());
  if (!gates.is_array()) return false;
  return std::any_of(gates.begin(), gates.end(),
                     [&](const json& g) { return kube::StringField(g, "name") == gate; });
}

namespace {

// When the rank's main container ended ("" when it has not, or never ran).
std::string RankFinishedAt(const json& pod) {
  return kube::StringAt(MainContainerStatus(pod), "/state/terminated/finishedAt"_json_pointer);
}

}  // namespace

std::optional<GangOutcome> OutcomeOfRanks(const std::vector<json>& ranks, int n) {
  const json* first_failed = nullptr;
  PodOutcome failed_outcome;
  int finished_ok = 0;
  for (const json& pod : ranks) {
    if (StageOf(pod) != PodStage::kFinished) continue;
    const PodOutcome outcome = OutcomeOf(pod, "");
    if (outcome.exit_code == 0) {
      ++finished_ok;
      continue;
    }
    // The earliest to end is the cause; the others were stopped because of it.
    const bool earlier =
        first_failed == nullptr ||
        (!RankFinishedAt(pod).empty() && (RankFinishedAt(*first_failed).empty() ||
                                          RankFinishedAt(pod) < RankFinishedAt(*first_failed)));
    if (earlier) {
      first_failed = &pod;
      failed_outcome = outcome;
    }
  }
  if (first_failed != nullptr) {
    const std::string node = kube::StringAt(*first_failed, "/spec/nodeName"_json_pointer);
    std::string why = failed_outcome.message.empty()
                          ? StrCat("exited with ", failed_outcome.exit_code)
                          : failed_outcome.message;
    return GangOutcome{
        .exit_code = failed_outcome.exit_code,
        .message = StrCat("rank ", RankOf(*first_failed), " (pod ",
                          kube::StringAt(*first_failed, "/metadata/name"_json_pointer),
                          node.empty() ? "" : StrCat(" on ", node), ") ", why,
                          "; the other ranks were stopped")};
  }
  if (finished_ok == n) return GangOutcome{};
  return std::nullopt;
}

}  // namespace canhazgpu::cli::k8s
