// `k8shazgpu explain` and `queue` on the cluster of issue 17's goal: 100
// nodes x 8 GPUs, 400 claims allocated, one pending pod asking for 2 GPUs
// with at least 40Gi. Goal: explain under 100 ms.
// Results: docs/perf.md ("k8shazgpu explain").
#include <benchmark/benchmark.h>

#include "clusterview/explain.h"
#include "clusterview/queue.h"
#include "clusterview/test_view.h"

namespace canhazgpu::clusterview {
namespace {

using namespace testing;  // NOLINT: the view builders

// 100 x 8 GPUs; on every node 4 one-GPU claims (400 in all) on gpu-0..3,
// gpu-4..6 held by local canhazgpu users (withdrawn from the slice, named in
// the NodeGpuStatus) and gpu-7 tainted, so the pending 2-GPU pod fits
// nowhere and every node is tried to the end, with every kind of holder.
View BigView() {
  View view;
  AddClasses(view);
  for (int n = 0; n < 100; ++n) {
    const std::string node = StrCat("node-", n);
    AddGpuNode(view, node, 8);
    dra::DevicePool& pool = view.pools.pools.back().pool;
    pool.devices[7].taints = {{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}};
    nlohmann::json devices = nlohmann::json::array();
    for (int g = 0; g < 8; ++g) {
      nlohmann::json d = {{"name", StrCat("gpu-", g)},
                          {"type", "gpu"},
                          {"index", g},
                          {"uuid", StrCat("GPU-0000000", g)},
                          {"productName", "NVIDIA A100-SXM4-40GB"},
                          {"state", "Free"}};
      if (g < 4) {
        AddRunning(view, StrCat("job-", n, "-", g), node, {StrCat("gpu-", g)}, "bob");
        d["state"] = "Prepared";
      } else if (g < 7) {
        d["state"] = "Held";
        d["held"] = {{"user", "carol"}, {"kind", "Run"}, {"since", "2026-11-24T10:02:00Z"}};
      }
      devices.push_back(d);
    }
    pool.devices.erase(pool.devices.begin() + 4, pool.devices.begin() + 7);
    view.node_gpu_statuses[node] = GpuStatusOf({{"status", {{"devices", devices}}}});
  }
  Put(view, Claim("default", "train-gpu",
                  {Request("gpu", kGpuClass, 2,
                           {"device.capacity[\"gpu.canhazgpu.dev\"].memory.compareTo("
                            "quantity(\"40Gi\")) >= 0"})}));
  Put(view, Pod("default", "train", "train-gpu", "alice"));
  return view;
}

void BM_ExplainPendingPod(benchmark::State& state) {
  const View view = BigView();
  const nlohmann::json& pod = view.pods.at("default/train");
  const TimePoint now = FromEpochMillis(1'795'000'000'000);
  for (auto _ : state) {
    Diagnosis d = ExplainPod(view, pod, now);
    std::string text = d.Text();
    benchmark::DoNotOptimize(text);
  }
  state.counters["claims"] = static_cast<double>(view.claims.size() - 1);
}
BENCHMARK(BM_ExplainPendingPod)->Unit(benchmark::kMillisecond);

void BM_QueueOnePending(benchmark::State& state) {
  const View view = BigView();
  const TimePoint now = FromEpochMillis(1'795'000'000'000);
  for (auto _ : state) benchmark::DoNotOptimize(QueueRows(PendingQueue(view, now)));
}
BENCHMARK(BM_QueueOnePending)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace canhazgpu::clusterview

BENCHMARK_MAIN();
