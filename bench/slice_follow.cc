// bench/node_driver.sh's driver: how long after `canhazgpu reserve -G 3`
// (and `release`) returns the node's ResourceSlice stops (starts again)
// listing gpu-3, read with our client in a tight loop. Prints the median and
// the worst of each.
// Usage: slice_follow KUBECONFIG CANHAZGPU ROUNDS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/command_runner.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace {

using canhazgpu::kube::Client;
using Clock = std::chrono::steady_clock;

bool Lists(Client& client, const std::string& device) {
  absl::StatusOr<nlohmann::json> slices = client.ListAll(canhazgpu::kube::kResourceSlices, "");
  if (!slices.ok()) return false;
  for (const nlohmann::json& s : (*slices)["items"]) {
    for (const nlohmann::json& d : s["spec"].value("devices", nlohmann::json::array())) {
      if (d["name"] == device) return true;
    }
  }
  return false;
}

// Milliseconds from the command's return until `lists` holds.
double Follow(Client& client, std::vector<std::string> command, bool lists) {
  if (canhazgpu::bench::RunCommand(std::move(command)) != 0) return -1;
  const auto start = Clock::now();
  while (Lists(client, "gpu-3") != lists) {
    if (Clock::now() - start > std::chrono::seconds(30)) return -1;
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void Report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%s: median %.0f ms, worst %.0f ms (%zu rounds)\n", what, ms[ms.size() / 2],
              ms.back(), ms.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: slice_follow KUBECONFIG CANHAZGPU ROUNDS\n");
    return 2;
  }
  canhazgpu::kube::LoadOptions load;
  load.kubeconfig_flag = argv[1];
  auto client =
      Client::Create(canhazgpu::kube::LoadRestConfig(load).value(), {.qps = 10000, .burst = 10000})
          .value();
  const std::string chg = argv[2];
  std::vector<double> withdrawn, returned;
  for (int i = 0; i < std::atoi(argv[3]); ++i) {
    // A person's pace, not a flood: the daemon's client keeps client-go's
    // 5 requests a second, and a burst of toggles would measure that limit.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    withdrawn.push_back(Follow(*client, {chg, "reserve", "-G", "3", "-d", "1h"}, false));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    returned.push_back(Follow(*client, {chg, "release", "-G", "3"}, true));
    if (withdrawn.back() < 0 || returned.back() < 0) {
      std::fprintf(stderr, "slice_follow: the slice did not follow within 30 s\n");
      return 1;
    }
  }
  Report("reserve -> withdrawn", withdrawn);
  Report("release -> published", returned);
  return 0;
}
