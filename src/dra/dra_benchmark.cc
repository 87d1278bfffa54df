// CEL selector evaluation and allocator throughput on the shapes of
// Kubernetes' scheduler_perf DRA workloads (reference/dra.md §8.1).
// Results: docs/perf.md ("Selectors and the allocator").
#include <benchmark/benchmark.h>

#include <map>

#include "cel/program.h"
#include "dra/allocator.h"
#include "dra/test_pools.h"

namespace canhazgpu::dra {
namespace {

using testing::kGpuClassSelector;
using testing::kMigClassSelector;

constexpr char kMemory[] =
    "device.capacity[\"gpu.canhazgpu.dev\"].memory.compareTo(quantity(\"40Gi\")) >= 0";
constexpr char kProduct[] =
    "device.attributes[\"gpu.canhazgpu.dev\"].productName == \"NVIDIA A100-SXM4-40GB\"";
constexpr char kCapability[] =
    "device.attributes[\"gpu.canhazgpu.dev\"].cudaComputeCapability.compareTo(semver(\"8.0.0\")) "
    ">= 0";
constexpr char kSelectorEmpty[] =
    "device.attributes[\"gpu.canhazgpu.dev\"].driverVersion.major() >= 1 && "
    "device.capacity[\"gpu.canhazgpu.dev\"].memory.isGreaterThan(quantity(\"1Mi\"))";

void EvaluateSelector(benchmark::State& state, const std::string& expression) {
  DevicePool pool = BuildDevicePool({testing::TestGpu(0)}, "n");
  cel::Value device = CelDevice(pool.devices[0], kDriverName);
  auto program = cel::Env::DraSelector().Compile(expression);
  if (!program.ok()) {
    state.SkipWithError(std::string(program.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    cel::Value v = program->Evaluate(&device);
    benchmark::DoNotOptimize(v);
  }
}

void BM_CelMemory(benchmark::State& state) { EvaluateSelector(state, kMemory); }
void BM_CelProduct(benchmark::State& state) { EvaluateSelector(state, kProduct); }
void BM_CelComputeCapability(benchmark::State& state) { EvaluateSelector(state, kCapability); }
void BM_CelConjunction(benchmark::State& state) {
  EvaluateSelector(state, std::string(kMemory) + " && " + kProduct + " && " + kCapability);
}
void BM_CelSelectorEmpty(benchmark::State& state) { EvaluateSelector(state, kSelectorEmpty); }
// The floor: what one evaluation costs before any node does work.
void BM_CelConstant(benchmark::State& state) { EvaluateSelector(state, "true"); }
BENCHMARK(BM_CelConstant);
BENCHMARK(BM_CelMemory);
BENCHMARK(BM_CelProduct);
BENCHMARK(BM_CelComputeCapability);
BENCHMARK(BM_CelConjunction);
BENCHMARK(BM_CelSelectorEmpty);

void BM_CelCompile(benchmark::State& state) {
  cel::Env env = cel::Env::DraSelector();
  std::string expression = std::string(kMemory) + " && " + kProduct + " && " + kCapability;
  for (auto _ : state) benchmark::DoNotOptimize(env.Compile(expression));
}
BENCHMARK(BM_CelCompile);

// Fills the cluster with claims of `requests` single-device requests (one
// claim per `requests` devices), as SchedulingWithResourceClaimTemplate
// does; each claim goes to the first node where it fits.
void Fill(benchmark::State& state, const std::vector<std::string>& request_selectors, int requests,
          bool match) {
  const int nodes = static_cast<int>(state.range(0));
  const int devices = static_cast<int>(state.range(1));
  std::vector<DevicePool> pools = testing::TestNodes(nodes, devices, 2);
  const int claims = nodes * devices / requests;
  Claim claim;
  for (int r = 0; r < requests; ++r) {
    RequestSpec spec{.device_class = "gpu", .selectors = request_selectors};
    claim.requests.push_back({StrCat("r", r), {spec}, false});
  }
  if (match) claim.constraints.push_back({.match_attribute = kPcieRootAttribute});
  int64_t allocated = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto allocator = Allocator::Create({{"gpu", {kGpuClassSelector}}}, pools);
    state.ResumeTiming();
    for (int c = 0; c < claims; ++c) {
      claim.name = StrCat("claim-", c);
      auto result = (*allocator)->Allocate(claim);
      if (!result.ok()) {
        state.SkipWithError(std::string(result.status().message()).c_str());
        return;
      }
      ++allocated;
    }
  }
  state.SetItemsProcessed(allocated);
  state.counters["claims"] = claims;
}

void BM_AllocateClassSelector(benchmark::State& state) { Fill(state, {}, 1, false); }
void BM_AllocateCelSelector(benchmark::State& state) { Fill(state, {kSelectorEmpty}, 1, false); }
void BM_AllocateMatchAttribute(benchmark::State& state) { Fill(state, {}, 5, true); }
BENCHMARK(BM_AllocateClassSelector)
    ->Args({500, 10})
    ->Args({500, 8})
    ->Args({100, 10})
    ->Args({1000, 10})
    ->Args({500, 40})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllocateCelSelector)->Args({500, 10})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllocateMatchAttribute)->Args({500, 10})->Unit(benchmark::kMillisecond);

// Partitionable: 8 A100s per node in MIG mode (three instances each); claims
// for one MIG instance until the cluster is full.
void BM_AllocatePartitionable(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  std::vector<DevicePool> pools;
  for (int n = 0; n < nodes; ++n) {
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 8; ++i) gpus.push_back(testing::TestMigGpu(i));
    pools.push_back(BuildDevicePool(gpus, StrCat("node-", n)));
  }
  const int claims = nodes * 8 * 3;
  Claim claim{"", {{"mig", {{.device_class = "mig"}}, false}}, {}};
  int64_t allocated = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto allocator = Allocator::Create({{"mig", {kMigClassSelector}}}, pools);
    state.ResumeTiming();
    for (int c = 0; c < claims; ++c) {
      claim.name = StrCat("claim-", c);
      if (!(*allocator)->Allocate(claim).ok()) {
        state.SkipWithError("partitionable allocation failed");
        return;
      }
      ++allocated;
    }
  }
  state.SetItemsProcessed(allocated);
}
BENCHMARK(BM_AllocatePartitionable)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

// Consumable capacity (issue 34): `nodes` x 8 40Gi GPUs published for
// sharing (40448Mi each after the 512Mi margin), each already holding 1-8
// shares of 4Gi (loaded with MarkAllocated, as the cluster's existing
// allocations are); then claims for a 4Gi share until every GPU is full (9
// shares). Each claim goes to the first node and GPU with room left.
void BM_AllocateShares(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  constexpr int64_t kShare = int64_t{4} << 30;
  std::vector<DevicePool> pools;
  for (int n = 0; n < nodes; ++n) {
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 8; ++i) gpus.push_back(testing::TestGpu(i));
    pools.push_back(BuildDevicePool(gpus, StrCat("node-", n), {.sharing = true}));
  }
  // 1-8 existing shares per GPU, spread evenly (a fixed pattern, so every
  // run does the same work).
  auto existing = [](int n, int g) { return 1 + (n * 8 + g) * 5 % 8; };
  int claims = 0;
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < 8; ++g) claims += 9 - existing(n, g);
  RequestSpec spec{.device_class = "gpu"};
  spec.capacity_requests["memory"] = kShare;
  Claim claim{"", {{"gpu", {spec}, false}}, {}};
  const std::map<std::string, int64_t> held{{"memory", kShare}};
  int64_t allocated = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto allocator = Allocator::Create({{"gpu", {kGpuClassSelector}}}, pools);
    for (int n = 0; n < nodes; ++n) {
      for (int g = 0; g < 8; ++g) {
        for (int k = 0; k < existing(n, g); ++k) {
          (void)(*allocator)->MarkAllocated(StrCat("node-", n), StrCat("gpu-", g), "held", &held);
        }
      }
    }
    state.ResumeTiming();
    for (int c = 0; c < claims; ++c) {
      claim.name = StrCat("claim-", c);
      auto result = (*allocator)->Allocate(claim);
      if (!result.ok()) {
        state.SkipWithError(std::string(result.status().message()).c_str());
        return;
      }
      ++allocated;
    }
    state.PauseTiming();
    // The cluster is full now: one more share fits nowhere.
    if ((*allocator)->Allocate(claim).ok()) state.SkipWithError("a share too many fitted");
    state.ResumeTiming();
  }
  state.SetItemsProcessed(allocated);
  state.counters["claims"] = claims;
}
BENCHMARK(BM_AllocateShares)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace canhazgpu::dra

BENCHMARK_MAIN();
