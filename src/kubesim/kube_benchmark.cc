// The client against the simulated API server on loopback: listing and
// decoding 500 ResourceSlices of 8 devices (goal: under 100 ms), watch event
// throughput, and an informer's memory per cached device (goal: 5,000
// devices in under 20 MiB). Results in docs/perf.md.
#include <malloc.h>

#include <thread>

#include "benchmark/benchmark.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/objects_resource.h"
#include "kubesim/api_server.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

// A slice as our node driver publishes one: 8 GPUs with the attributes and
// capacity of docs/dra (product, UUID, driver and CUDA versions, memory).
json Slice(int node) {
  json devices = json::array();
  for (int i = 0; i < 8; ++i) {
    devices.push_back({{"name", "gpu-" + std::to_string(i)},
                       {"attributes",
                        {{"productName", {{"string", "NVIDIA H100 80GB HBM3"}}},
                         {"uuid",
                          {{"string", "GPU-" + std::to_string(node) + "-" + std::to_string(i) +
                                          "-6d3c5b0a-9f1e-4a2b-8c7d"}}},
                         {"index", {{"int", i}}},
                         {"driverVersion", {{"version", "580.82.7"}}},
                         {"cudaComputeCapability", {{"version", "9.0.0"}}}}},
                       {"capacity", {{"memory", {{"value", "81559Mi"}}}}}});
  }
  const std::string name = "node-" + std::to_string(node);
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name + "-gpu.canhazgpu.dev"}}},
          {"spec",
           {{"driver", "gpu.canhazgpu.dev"},
            {"nodeName", name},
            {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

class Cluster {
 public:
  explicit Cluster(int nodes) : server_(store_, {}) {
    const int port = server_.Bind("127.0.0.1", 0).value();
    thread_ = std::thread([this] { server_.Serve(); });
    RestConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(port);
    client_ = Client::Create(config, {.qps = 1e6, .burst = 1'000'000}).value();
    for (int n = 0; n < nodes; ++n) {
      if (!client_->CreateObject(kResourceSlices, "", Slice(n)).ok()) std::abort();
    }
  }
  ~Cluster() {
    server_.Stop();
    thread_.join();
  }
  Client& client() { return *client_; }

 private:
  kubesim::ObjectStore store_{100'000};
  kubesim::ApiServer server_;
  std::thread thread_;
  std::unique_ptr<Client> client_;
};

void BM_ListAndDecode500Slices(benchmark::State& state) {
  Cluster cluster(500);
  size_t devices = 0;
  for (auto _ : state) {
    absl::StatusOr<json> list = cluster.client().ListAll(kResourceSlices, "", {.limit = 500});
    devices = 0;
    for (const json& slice : (*list)["items"]) devices += slice["spec"]["devices"].size();
    benchmark::DoNotOptimize(devices);
  }
  state.counters["devices"] = static_cast<double>(devices);
}
BENCHMARK(BM_ListAndDecode500Slices)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same list, each slice then decoded into the typed ResourceSlice the
// node driver and the CLI read.
void BM_ListAndDecode500TypedSlices(benchmark::State& state) {
  Cluster cluster(500);
  size_t devices = 0;
  for (auto _ : state) {
    absl::StatusOr<json> list = cluster.client().ListAll(kResourceSlices, "", {.limit = 500});
    devices = 0;
    for (const json& item : (*list)["items"]) {
      absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(item);
      devices += slice->spec.devices.size();
    }
    benchmark::DoNotOptimize(devices);
  }
  state.counters["devices"] = static_cast<double>(devices);
}
BENCHMARK(BM_ListAndDecode500TypedSlices)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WatchEvents(benchmark::State& state) {
  Cluster cluster(0);
  const std::string rv =
      cluster.client().List(kConfigMaps, "default").value()["metadata"]["resourceVersion"];
  const int events = 2000;
  for (auto _ : state) {
    state.PauseTiming();
    std::thread writer([&] {
      for (int i = 0; i < events; ++i) {
        json cm = {{"metadata", {{"name", "cm" + std::to_string(i)}}}, {"data", {{"k", "v"}}}};
        (void)cluster.client().CreateObject(kConfigMaps, "default", cm);
      }
    });
    writer.join();
    state.ResumeTiming();
    int seen = 0;
    (void)cluster.client().Watch(
        kConfigMaps, "default", {.resource_version = rv},
        [&](const WatchEvent& e) { return e.type == "BOOKMARK" || ++seen < events; });
    state.PauseTiming();
    for (int i = 0; i < events; ++i) {
      (void)cluster.client().Delete(kConfigMaps, "default", "cm" + std::to_string(i));
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * events);
}
BENCHMARK(BM_WatchEvents)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Heap held by an informer's cache of 625 slices (5,000 devices): the
// difference in allocated bytes before and after it syncs.
void BM_InformerMemory5000Devices(benchmark::State& state) {
  Cluster cluster(625);
  size_t bytes = 0;
  for (auto _ : state) {
    const size_t before = mallinfo2().uordblks;
    {
      Informer informer(cluster.client(), kResourceSlices, "", {}, {});
      informer.Start();
      informer.WaitForSync(std::chrono::seconds(60));
      informer.Stop();
      bytes = mallinfo2().uordblks - before;
      benchmark::DoNotOptimize(informer.size());
    }
  }
  state.counters["MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["bytes_per_device"] = static_cast<double>(bytes) / 5000;
}
BENCHMARK(BM_InformerMemory5000Devices)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace canhazgpu::kube

BENCHMARK_MAIN();
