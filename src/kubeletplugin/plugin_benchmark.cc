// NodePrepareResources for a one-GPU claim, as the kubelet calls it: our
// kubelet client over the real unix socket to the plugin server, the real
// preparer reading the claim from the simulated API server over HTTP, the
// SQLite host store, the checkpoint and the CDI spec on disk. Reports the
// median and p99 of the calls (docs/perf.md).
#include <algorithm>
#include <filesystem>

#include "benchmark/benchmark.h"
#include "dra/test_pools.h"
#include "driver/api_claim_source.h"
#include "driver/claim_preparer.h"
#include "driver/testing/allocated_claim.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubeletplugin/plugin_server.h"
#include "kubesim/testing/test_api_server.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::kubeletplugin {
namespace {

void BM_PrepareOneGpuClaim(benchmark::State& state) {
  char tmpl[] = "/tmp/prep_bench.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  kubesim::TestApiServer sim;
  auto client = kube::Client::Create(sim.Config(), {.qps = 1e6, .burst = 1'000'000}).value();
  auto store = store::SqliteStateStore::Open(dir + "/state.db", {.create = true}).value();
  (void)store->Update([](store::StateTransaction& tx) { return tx.SetPool({.gpu_count = 8}); });
  const Clock& clock = RealClock();
  std::string note;
  std::filesystem::create_directories(dir + "/plugin");
  driver::Checkpoint checkpoint =
      driver::Checkpoint::Load(dir + "/plugin", "b", clock, &note).value();
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(dra::testing::TestGpu(i));
  const driver::NodeDevices node{.pool = dra::BuildDevicePool(gpus, "node-a")};
  driver::ApiClaimSource claims(*client);
  driver::ClaimPreparer preparer(
      {.cdi_dir = dir + "/cdi", .toolkit_spec_dirs = {}, .driver_root = dir + "/root"}, claims,
      [&] { return node; }, *store, checkpoint, clock);
  auto server =
      PluginServer::Start({.registrar_dir = dir + "/registry", .plugin_dir = dir + "/plugin"},
                          preparer, nullptr)
          .value();
  auto kubelet = KubeletClient::Register(dir + "/registry/gpu.canhazgpu.dev-reg.sock").value();

  std::vector<double> micros;
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const driver::ClaimRef ref =
        driver::testing::CreateAllocatedClaim(*client, "default", "c" + std::to_string(n),
                                              {"gpu-" + std::to_string(n % 8)})
            .value();
    ++n;
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    auto out = kubelet->NodePrepareResources({ref});
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    state.PauseTiming();
    if (!out.ok() || !(*out)[ref.uid].error.empty()) {
      state.SkipWithError("prepare failed");
      break;
    }
    (void)kubelet->NodeUnprepareResources({ref});
    state.ResumeTiming();
  }
  std::sort(micros.begin(), micros.end());
  if (!micros.empty()) {
    state.counters["median_us"] = micros[micros.size() / 2];
    state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
  }
  server->Shutdown();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_PrepareOneGpuClaim)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(500);

}  // namespace
}  // namespace canhazgpu::kubeletplugin

BENCHMARK_MAIN();
