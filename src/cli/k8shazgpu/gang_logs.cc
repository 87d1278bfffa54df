#include "cli/k8shazgpu/gang_logs.h"

#include <cstdio>

#include "cli/k8shazgpu/gang_ranks.h"
#include "cli/k8shazgpu/log_follow.h"
#include "cli/k8shazgpu/pod_outcome.h"
#include "cli/k8shazgpu/run_objects.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {

using nlohmann::json;

std::string PrefixLines(int rank, std::string_view text, std::string& partial) {
  std::string out;
  const std::string prefix = StrCat("[", rank, "] ");
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      partial.append(text);
      break;
    }
    out += prefix;
    out += partial;
    out.append(text.substr(0, end + 1));
    partial.clear();
    text.remove_prefix(end + 1);
  }
  return out;
}

GangLogs::GangLogs(kube::Client& client, std::string ns, std::optional<int> only_rank)
    : client_(client), ns_(std::move(ns)), only_rank_(only_rank) {}

GangLogs::~GangLogs() { Stop(); }

void GangLogs::Update(const std::vector<json>& ranks) {
  for (const json& pod : ranks) {
    const int rank = RankOf(pod);
    if (only_rank_ && rank != *only_rank_) continue;
    const PodStage stage = StageOf(pod);
    // A container that started has a log, even when it has ended already.
    if (stage != PodStage::kRunning &&
        !(stage == PodStage::kFinished && MainContainerStatus(pod).is_object()))
      continue;
    const std::string uid = kube::StringAt(pod, "/metadata/uid"_json_pointer);
    if (!started_.emplace(uid, rank).second) continue;
    threads_.emplace_back(&GangLogs::Copy, this, rank,
                          kube::StringAt(pod, "/metadata/name"_json_pointer));
  }
}

void GangLogs::Copy(int rank, std::string pod) {
  std::string partial;
  FollowOptions options{.container = kContainerName,
                        .cancel = &cancel_,
                        .ended =
                            [&] {
                              absl::StatusOr<json> now = client_.Get(kube::kPods, ns_, pod);
                              return !now.ok() || StageOf(*now) == PodStage::kFinished ||
                                     cancel_.load();
                            },
                        .max_reconnects = 50};
  absl::Status followed = FollowLogs(client_, ns_, pod, options, [&](std::string_view text) {
    Write(only_rank_ ? std::string(text) : PrefixLines(rank, text, partial));
  });
  if (!partial.empty()) Write(StrCat("[", rank, "] ", partial, "\n"));
  if (!followed.ok() && !cancel_.load()) {
    MutexLock lock(out_mu_);
    std::fprintf(stderr, "k8shazgpu: warning: rank %d's output: %s\n", rank,
                 std::string(followed.message()).c_str());
  }
}

void GangLogs::Write(std::string_view text) {
  if (text.empty()) return;
  MutexLock lock(out_mu_);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void GangLogs::Finish() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void GangLogs::Stop() {
  cancel_ = true;
  Finish();
}

}  // namespace canhazgpu::cli::k8s
