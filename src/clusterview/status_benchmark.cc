// `k8shazgpu status` on the cluster of issue 17's goal: 100 nodes x 8 GPUs,
// 400 one-GPU claims allocated and reserved for their pods, a NodeGpuStatus
// per node (one GPU held locally and withheld from the slice, one in use
// without a reservation). The status model and its rendering from a View,
// and the whole command's reading of the cluster (LoadView) from the
// simulated API server over HTTP. Results: docs/perf.md ("k8shazgpu status").
#include <benchmark/benchmark.h>

#include <vector>

#include "clusterview/gpu_status.h"
#include "clusterview/load.h"
#include "clusterview/testing/status_objects.h"
#include "dra/test_pools.h"
#include "kubesim/testing/test_api_server.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

constexpr int kNodes = 100;
constexpr int kGpusPerNode = 8;
constexpr int kClaimsPerNode = 4;  // 400 in all
const TimePoint kNow = FromEpochMillis(1'795'514'400'000);

struct Object {
  const kube::ResourceRef* ref;
  json object;
};

std::vector<Object> ClusterObjects() {
  std::vector<Object> out = {{&kube::kNamespaces, testing::NamespaceObject("ml")}};
  for (int n = 0; n < kNodes; ++n) {
    const std::string node = StrCat("node-", n);
    out.push_back({&kube::kNodes, testing::NodeObject(node)});
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < kGpusPerNode; ++i) gpus.push_back(dra::testing::TestGpu(i));
    dra::DevicePool pool = dra::BuildDevicePool(gpus, node);
    pool.devices.pop_back();  // gpu-7: held locally, withheld from the slice
    out.push_back({&kube::kResourceSlices, testing::SliceObject(pool)});
    for (int c = 0; c < kClaimsPerNode; ++c) {
      const std::string name = StrCat("job-", n, "-", c);
      out.push_back({&kube::kPods, testing::PodObject("ml", name, node, StrCat("user-", c),
                                                      "2026-11-24T09:00:00Z")});
      out.push_back({&kube::kResourceClaims,
                     testing::ClaimObject("ml", name + "-gpu", node, {StrCat("gpu-", c)}, {name})});
    }
    json devices = json::array();
    for (int i = 0; i < kGpusPerNode; ++i) {
      json d = {{"name", StrCat("gpu-", i)},
                {"type", "gpu"},
                {"productName", "NVIDIA A100-SXM4-40GB"},
                {"state", i < kClaimsPerNode ? "Prepared" : "Free"}};
      if (i < kClaimsPerNode) {
        d["claims"] = {{{"namespace", "ml"},
                        {"name", StrCat("job-", n, "-", i, "-gpu")},
                        {"pods", {StrCat("job-", n, "-", i)}}}};
      }
      if (i == 6) {
        d["state"] = "InUse";
        d["usage"] = {{"memoryUsedBytes", 1LL << 30}, {"users", {"carol"}}};
      }
      if (i == 7) {
        d["state"] = "Held";
        d["held"] = {{"user", "bob"},
                     {"kind", "Manual"},
                     {"since", "2026-11-24T09:00:00Z"},
                     {"until", "2026-11-24T12:00:00Z"}};
      }
      devices.push_back(std::move(d));
    }
    out.push_back({&kube::kNodeGpuStatuses,
                   testing::NodeGpuStatusObject(node, devices, "2026-11-24T09:59:50Z").ToJson()});
  }
  return out;
}

View ViewOf(const std::vector<Object>& objects) {
  View view;
  std::vector<json> slices;
  for (const Object& o : objects) {
    if (o.ref == &kube::kResourceSlices) {
      slices.push_back(o.object);
    } else if (o.ref == &kube::kNodeGpuStatuses) {
      kube::NodeGpuStatus status = kube::NodeGpuStatus::FromJson(o.object).value();
      view.node_gpu_statuses[status.NodeName()] = status;
    } else if (o.ref != &kube::kNamespaces) {
      auto& into = o.ref == &kube::kNodes  ? view.nodes
                   : o.ref == &kube::kPods ? view.pods
                                           : view.claims;
      into[KeyOf(o.object)] = o.object;
    }
  }
  view.pools = PoolsFromJson(slices);
  return view;
}

// What `status` prints: the table's rows, the summary's, and --json.
size_t Render(const GpuStatusReport& report) {
  TextRows rows = StatusRows(report);
  TextRows summary = SummaryRows(report);
  std::string json = StatusJson(report).dump();
  return rows.rows.size() + summary.rows.size() + json.size();
}

void BM_GpuStatus(benchmark::State& state) {
  const View view = ViewOf(ClusterObjects());
  for (auto _ : state) {
    absl::StatusOr<GpuStatusReport> report = GpuStatus(view, kNow);
    if (!report.ok() || report->rows.size() != kNodes * kGpusPerNode) {
      state.SkipWithError("wrong report");
      return;
    }
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_GpuStatus)->Unit(benchmark::kMillisecond);

void BM_GpuStatusAndRender(benchmark::State& state) {
  const View view = ViewOf(ClusterObjects());
  for (auto _ : state) {
    absl::StatusOr<GpuStatusReport> report = GpuStatus(view, kNow);
    benchmark::DoNotOptimize(Render(*report));
  }
}
BENCHMARK(BM_GpuStatusAndRender)->Unit(benchmark::kMillisecond);

// The whole command but its process start: seven lists over HTTP from the
// simulated server, the View, the status and its output.
void BM_LoadViewAndStatus(benchmark::State& state) {
  kubesim::TestApiServer sim;
  auto client = kube::Client::Create(sim.Config(), {.qps = 1e6, .burst = 1'000'000}).value();
  const kube::ResourceRef crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "nodegpustatuses.canhazgpu.dev"}}},
              {"spec",
               {{"group", "canhazgpu.dev"},
                {"scope", "Cluster"},
                {"names",
                 {{"kind", "NodeGpuStatus"},
                  {"plural", "nodegpustatuses"},
                  {"listKind", "NodeGpuStatusList"},
                  {"singular", "nodegpustatus"}}},
                {"versions",
                 {{{"name", "v1alpha1"},
                   {"served", true},
                   {"storage", true},
                   {"subresources", {{"status", json::object()}}},
                   {"schema",
                    {{"openAPIV3Schema",
                      {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
  if (auto made = client->CreateObject(crds, "", crd); !made.ok()) {
    state.SkipWithError(std::string(made.status().message()).c_str());
    return;
  }
  for (const Object& o : ClusterObjects()) {
    const std::string ns = o.object.value("/metadata/namespace"_json_pointer, std::string());
    absl::StatusOr<json> made = client->CreateObject(*o.ref, ns, o.object);
    if (made.ok() && o.object.contains("status")) {
      (*made)["status"] = o.object["status"];
      made = client->UpdateStatus(*o.ref, ns, *made);
    }
    if (!made.ok()) {
      state.SkipWithError(std::string(made.status().message()).c_str());
      return;
    }
  }
  for (auto _ : state) {
    absl::StatusOr<View> view = LoadView(*client);
    if (!view.ok()) {
      state.SkipWithError(std::string(view.status().message()).c_str());
      return;
    }
    absl::StatusOr<GpuStatusReport> report = GpuStatus(*view, kNow);
    if (!report.ok() || report->rows.size() != kNodes * kGpusPerNode) {
      state.SkipWithError("wrong report");
      return;
    }
    benchmark::DoNotOptimize(Render(*report));
  }
}
BENCHMARK(BM_LoadViewAndStatus)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace canhazgpu::clusterview

// main() is explain_benchmark.cc's: one binary runs both.
