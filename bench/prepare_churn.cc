// bench/node_driver.sh's kubelet: NodePrepareResources and
// NodeUnprepareResources pairs back to back through the node daemon's real
// plugin socket, as the kubelet calls them while pods churn. Each claim is
// a one-GPU claim reserved for a pod bound to node-a with the
// canhazgpu.dev/user label, all created (untimed) before the first call.
// Prints the median and p99 of each kind of call.
// Usage: prepare_churn KUBECONFIG REGISTRATION_SOCKET ROUNDS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver/testing/allocated_claim.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kubeletplugin/kubelet_client.h"

namespace {

namespace chg = canhazgpu;
using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void Report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%s: median %.2f ms, p99 %.2f ms, worst %.2f ms (%zu calls)\n", what,
              ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], ms.back(),
              ms.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::atoi(argv[3]) <= 0) {
    std::fprintf(stderr, "usage: prepare_churn KUBECONFIG REGISTRATION_SOCKET ROUNDS\n");
    return 2;
  }
  chg::kube::LoadOptions load;
  load.kubeconfig_flag = argv[1];
  auto client = chg::kube::Client::Create(chg::kube::LoadRestConfig(load).value(),
                                          {.qps = 10000, .burst = 10000})
                    .value();
  const int rounds = std::atoi(argv[3]);
  std::vector<chg::driver::ClaimRef> claims;
  for (int i = 0; i < rounds; ++i) {
    const std::string name = "churn-" + std::to_string(i);
    const nlohmann::json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"canhazgpu.dev/user", "bench"}}}}},
        {"spec",
         {{"nodeName", "node-a"}, {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
    if (!client->CreateObject(chg::kube::kPods, "default", pod).ok()) {
      std::fprintf(stderr, "prepare_churn: cannot create pod %s\n", name.c_str());
      return 1;
    }
    absl::StatusOr<chg::driver::ClaimRef> claim = chg::driver::testing::CreateAllocatedClaim(
        *client, "default", name, {"gpu-" + std::to_string(i % 8)}, "node-a", name);
    if (!claim.ok()) {
      std::fprintf(stderr, "prepare_churn: %s\n", std::string(claim.status().message()).c_str());
      return 1;
    }
    claims.push_back(*claim);
  }
  auto kubelet = chg::kubeletplugin::KubeletClient::Register(argv[2]);
  if (!kubelet.ok()) {
    std::fprintf(stderr, "prepare_churn: %s\n", std::string(kubelet.status().message()).c_str());
    return 1;
  }
  std::vector<double> prepare, unprepare;
  for (const chg::driver::ClaimRef& claim : claims) {
    auto start = Clock::now();
    auto prepared = (*kubelet)->NodePrepareResources({claim});
    prepare.push_back(MillisSince(start));
    if (!prepared.ok() || !(*prepared)[claim.uid].error.empty()) {
      std::fprintf(stderr, "prepare_churn: prepare of %s failed: %s\n", claim.name.c_str(),
                   prepared.ok() ? (*prepared)[claim.uid].error.c_str()
                                 : std::string(prepared.status().message()).c_str());
      return 1;
    }
    start = Clock::now();
    auto unprepared = (*kubelet)->NodeUnprepareResources({claim});
    unprepare.push_back(MillisSince(start));
    if (!unprepared.ok() || !(*unprepared)[claim.uid].empty()) {
      std::fprintf(stderr, "prepare_churn: unprepare of %s failed\n", claim.name.c_str());
      return 1;
    }
  }
  Report("NodePrepareResources", prepare);
  Report("NodeUnprepareResources", unprepare);
  return 0;
}
