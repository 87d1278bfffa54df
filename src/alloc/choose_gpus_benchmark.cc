#include <benchmark/benchmark.h>

#include "alloc/choose_gpus.h"

namespace canhazgpu::alloc {
namespace {

// Choosing from a pool with history on every GPU, as on a busy host.
void BM_ChooseGpus(benchmark::State& state) {
  std::vector<GpuCandidate> gpus(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].last_released = FromEpochMillis(static_cast<int64_t>((i * 7919) % 1000));
    if (i % 3 == 0) gpus[i].last_used_by_requester = FromEpochMillis(static_cast<int64_t>(i));
    if (i % 4 == 0) gpus[i].state = GpuCandidate::State::kReserved;
  }
  for (auto _ : state) {
    auto chosen = ChooseGpus(gpus, {.count = 2});
    benchmark::DoNotOptimize(chosen);
  }
}
BENCHMARK(BM_ChooseGpus)->Arg(8)->Arg(64);

}  // namespace
}  // namespace canhazgpu::alloc

BENCHMARK_MAIN();
