// The NodeGpuStatus against the simulated API server, with the CRD that
// deploy/ ships.
#include "driver/node_status.h"

#include <fstream>
#include <sstream>

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/patch.h"
#include "kubesim/testing/test_api_server.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

class NodeStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = kube::Client::Create(sim_.Config(), {.qps = 1000, .burst = 1000}).value();
    std::ifstream in(std::string(DEPLOY_DIR) + "/crds/nodegpustatuses.yaml");
    std::stringstream text;
    text << in.rdbuf();
    const json crd = yaml::ToJson(text.str()).value();
    const kube::ResourceRef crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
    ASSERT_TRUE(client_->CreateObject(crds, "", crd).ok());
  }

  NodeView View() {
    NodeView view;
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < 4; ++i) gpus.push_back(dra::testing::TestGpu(i));
    view.devices.pool = dra::BuildDevicePool(gpus, "node-a");
    view.driver_version = "535.104.05";
    view.statuses = {{.gpu = 0, .state = alloc::GpuState::kAvailable},
                     {.gpu = 1,
                      .state = alloc::GpuState::kInUse,
                      .reservation = Reservation{.gpu = 1,
                                                 .user = "alice",
                                                 .kind = ReservationKind::kManual,
                                                 .start = FromEpochMillis(1'795'000'000'000),
                                                 .expires = FromEpochMillis(1'795'003'600'000)}},
                     {.gpu = 2,
                      .state = alloc::GpuState::kInUse,
                      .reservation = Reservation{.gpu = 2,
                                                 .user = "bob",
                                                 .kind = ReservationKind::kK8s,
                                                 .claim = KubeClaimRef{.namespace_name = "ml",
                                                                       .name = "train",
                                                                       .uid = "u-1",
                                                                       .pod = "train-0"}}},
                     {.gpu = 3,
                      .state = alloc::GpuState::kUnreserved,
                      .processes = {{.pid = 4242,
                                     .user = "carol",
                                     .command = "python serve.py",
                                     .used_memory_bytes = 2u << 30}}}};
    view.devices.taints["gpu-3"] = {
        {.key = "gpu.canhazgpu.dev/xid", .value = "79", .effect = "NoSchedule"}};
    return view;
  }
  json Read() { return client_->Get(kNodeGpuStatuses, "", "node-a").value(); }

  kubesim::TestApiServer sim_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(NodeStatusTest, EveryDeviceSaysWhatItIsDoing) {
  const kube::NodeGpuStatus object =
      NodeGpuStatusObject("node-a", "node-uid", View(), FromEpochMillis(1'795'000'100'000));
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(writer.Write(object, /*refresh=*/false).ok());
  const json got = Read();
  EXPECT_EQ(got["spec"]["nodeName"], "node-a");
  EXPECT_EQ(got["metadata"]["ownerReferences"][0]["uid"], "node-uid");
  const json& status = got["status"];
  EXPECT_EQ(status["summary"], (json{{"total", 4},
                                     {"free", 1},
                                     {"held", 1},
                                     {"prepared", 1},
                                     {"shared", 0},
                                     {"inUse", 1},
                                     {"tainted", 1},
                                     {"mig", 0}}));
  EXPECT_EQ(status["driverVersion"], "535.104.05");
  const json& d = status["devices"];
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0]["state"], "Free");
  EXPECT_EQ(d[1]["held"], (json{{"user", "alice"},
                                {"kind", "Manual"},
                                {"since", "2026-11-18T11:06:40Z"},
                                {"until", "2026-11-18T12:06:40Z"}}));
  EXPECT_EQ(d[2]["state"], "Prepared");
  EXPECT_EQ(d[2]["claims"][0],
            (json{{"namespace", "ml"}, {"name", "train"}, {"uid", "u-1"}, {"pods", {"train-0"}}}));
  EXPECT_EQ(d[3]["state"], "InUse");
  EXPECT_EQ(d[3]["usage"]["users"], (json{"carol"}));
  EXPECT_EQ(d[3]["usage"]["processes"][0]["pid"], 4242);
  EXPECT_EQ(d[3]["taints"][0]["value"], "79");
  EXPECT_EQ(d[3]["taints"][0]["source"], "Driver");
}

// Issue 33: a claimed GPU in MIG mode counted as prepared once per instance
// too. The summary counts whole GPUs, each once, and numbers the instances.
TEST_F(NodeStatusTest, SummaryCountsAGpuOnceWhateverItsMigInstances) {
  NodeView view = View();
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 4; ++i) gpus.push_back(dra::testing::TestGpu(i));
  gpus[2] = dra::testing::TestMigGpu(2);  // the prepared one
  view.devices.pool = dra::BuildDevicePool(gpus, "node-a");
  const kube::NodeGpuStatus object =
      NodeGpuStatusObject("node-a", "", view, FromEpochMillis(1'795'000'100'000));
  ASSERT_EQ(object.status.devices.size(), 7u);  // 4 GPUs, 3 instances
  const kube::NodeGpuSummary& summary = object.status.summary;
  EXPECT_EQ(summary.total, 4);
  EXPECT_EQ(summary.prepared, 1);
  EXPECT_EQ(summary.free, 1);
  EXPECT_EQ(summary.mig, 3);
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(writer.Write(object, /*refresh=*/false).ok());  // the CRD's schema takes it
  EXPECT_EQ(Read()["status"]["summary"]["mig"], 3);
}

// The object as the JSON builder before the typed NodeGpuStatus wrote it
// (issue 32, item 3): the same bytes on the wire.
TEST_F(NodeStatusTest, TheObjectIsTheOneWrittenBeforeItWasTyped) {
  EXPECT_EQ(
      NodeGpuStatusObject("node-a", "node-uid", View(), FromEpochMillis(1'795'000'100'000))
          .ToJson()
          .dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"NodeGpuStatus","metadata":{"name":"node-a","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-a","uid":"node-uid"}]},"spec":{"nodeName":"node-a"},"status":{"devices":[{"index":0,"name":"gpu-0","productName":"NVIDIA A100-SXM4-40GB","state":"Free","type":"gpu","uuid":"GPU-00000000"},{"held":{"kind":"Manual","since":"2026-11-18T11:06:40Z","until":"2026-11-18T12:06:40Z","user":"alice"},"index":1,"name":"gpu-1","productName":"NVIDIA A100-SXM4-40GB","state":"Held","type":"gpu","uuid":"GPU-00000001"},{"claims":[{"name":"train","namespace":"ml","pods":["train-0"],"uid":"u-1"}],"index":2,"name":"gpu-2","productName":"NVIDIA A100-SXM4-40GB","state":"Prepared","type":"gpu","uuid":"GPU-00000002"},{"index":3,"name":"gpu-3","productName":"NVIDIA A100-SXM4-40GB","state":"InUse","taints":[{"effect":"NoSchedule","key":"gpu.canhazgpu.dev/xid","source":"Driver","value":"79"}],"type":"gpu","usage":{"memoryUsedBytes":0,"processes":[{"command":"python serve.py","memoryBytes":2147483648,"pid":4242,"user":"carol"}],"users":["carol"]},"uuid":"GPU-00000003"}],"driverVersion":"535.104.05","summary":{"free":1,"held":1,"inUse":1,"mig":0,"prepared":1,"shared":0,"tainted":1,"total":4},"updateTime":"2026-11-18T11:08:20Z"}})");
  // No devices: the list is left out of the object, and written empty.
  EXPECT_EQ(
      NodeGpuStatusObject("node-a", "", NodeView{}, FromEpochMillis(1'795'000'100'000))
          .ToJson()
          .dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"NodeGpuStatus","metadata":{"name":"node-a"},"spec":{"nodeName":"node-a"},"status":{"summary":{"free":0,"held":0,"inUse":0,"mig":0,"prepared":0,"shared":0,"tainted":0,"total":0},"updateTime":"2026-11-18T11:08:20Z"}})");
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", View(), FromEpochMillis(1'795'000'000'000)),
                 false)
          .ok());
  ASSERT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", NodeView{}, FromEpochMillis(1'795'000'000'000)),
                 false)
          .ok());
  EXPECT_EQ(Read()["status"]["devices"], json::array());
}

// A GPU shared by memory: what it has, what is left, each pod's share under
// its claim and each local share with its user; counted once, as shared.
TEST_F(NodeStatusTest, ASharedGpuListsItsSharesAndIsCountedOnce) {
  NodeView view = View();
  view.devices.pool = dra::BuildDevicePool(
      {dra::testing::TestGpu(0), dra::testing::TestGpu(1), dra::testing::TestGpu(2),
       dra::testing::TestGpu(3)},
      "node-a",
      {.sharing = true, .reserved_bytes = 512 * static_cast<int64_t>(kMiB), .isolation = "none"});
  view.devices.pool.devices[0].attributes[dra::kMemoryIsolationAttribute] =
      dra::AttributeValue::String("mps");
  const uint64_t shareable = 40448 * kMiB;
  view.devices.shared["gpu-0"] = {.total = 40960 * kMiB, .shareable = shareable};
  view.devices.shared["gpu-1"] = {.total = 40960 * kMiB, .shareable = shareable};
  auto share = [&](uint64_t gib, ReservationKind kind, const std::string& id,
                   const std::string& user) {
    Reservation r{.gpu = 0,
                  .memory = gib << 30,
                  .share = id,
                  .shareable = shareable,
                  .user = user,
                  .kind = kind,
                  .start = FromEpochMillis(1'795'000'000'000)};
    if (kind == ReservationKind::kK8s) {
      r.claim = KubeClaimRef{
          .namespace_name = "ml", .name = "claim-" + id, .uid = "u-" + id, .pod = "pod-" + id};
    }
    return r;
  };
  alloc::GpuStatus& gpu0 = view.statuses[0];
  gpu0.state = alloc::GpuState::kInUse;
  gpu0.shares = {share(10, ReservationKind::kK8s, "s1", "bob"),
                 share(20, ReservationKind::kK8s, "s2", "carol"),
                 share(5, ReservationKind::kRun, "s3", "alice")};
  gpu0.reservation = gpu0.shares.front();
  const kube::NodeGpuStatus object =
      NodeGpuStatusObject("node-a", "", view, FromEpochMillis(1'795'000'100'000));
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(writer.Write(object, /*refresh=*/false).ok());  // the CRD's schema takes it
  const json status = Read()["status"];
  const json& d = status["devices"];
  EXPECT_EQ(d[0]["state"], "Shared");
  EXPECT_EQ(d[0]["claims"], (json{{{"namespace", "ml"},
                                   {"name", "claim-s1"},
                                   {"uid", "u-s1"},
                                   {"pods", {"pod-s1"}},
                                   {"shareID", "s1"},
                                   {"memory", "10Gi"}},
                                  {{"namespace", "ml"},
                                   {"name", "claim-s2"},
                                   {"uid", "u-s2"},
                                   {"pods", {"pod-s2"}},
                                   {"shareID", "s2"},
                                   {"memory", "20Gi"}}}));
  EXPECT_EQ(d[0]["sharing"], (json{{"shareableMemory", "40448Mi"},
                                   {"freeMemory", "4608Mi"},  // 40448Mi less 35Gi
                                   {"memoryIsolation", "mps"},
                                   {"localShares",
                                    {{{"shareID", "s3"},
                                      {"user", "alice"},
                                      {"kind", "Run"},
                                      {"memory", "5Gi"},
                                      {"since", "2026-11-18T11:06:40Z"}}}}}));
  // A shareable GPU held whole stays Held, with nothing to share.
  EXPECT_EQ(d[1]["state"], "Held");
  EXPECT_EQ(d[1]["sharing"]["shareableMemory"], "40448Mi");
  EXPECT_EQ(d[1]["sharing"]["freeMemory"], "0");
  EXPECT_FALSE(d[2].contains("sharing"));
  EXPECT_EQ(status["summary"]["shared"], 1);
  EXPECT_EQ(status["summary"]["held"], 1);
  EXPECT_EQ(status["summary"]["prepared"], 1);
  EXPECT_EQ(status["summary"]["free"], 0);
}

// The local waiters the node keeps devices for: the whole GPU (a MIG
// instance follows its GPU) or memory for a share, read back through the
// CRD's schema.
TEST_F(NodeStatusTest, DevicesKeptForLocalWaitersNameThem) {
  NodeView view = View();
  view.kept_for_queue[0] = {{.user = "dave", .since = FromEpochMillis(1'795'000'050'000)}};
  view.kept_for_queue[1] = {{.user = "erin", .memory = uint64_t{20} << 30}};
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", view, FromEpochMillis(1'795'000'100'000)),
                 /*refresh=*/false)
          .ok());
  const json d = Read()["status"]["devices"];
  EXPECT_EQ(d[0]["keptFor"], (json{{{"user", "dave"}, {"since", "2026-11-18T11:07:30Z"}}}));
  EXPECT_EQ(d[1]["keptFor"], (json{{{"user", "erin"}, {"memory", "20Gi"}}}));
  EXPECT_FALSE(d[2].contains("keptFor"));
  EXPECT_EQ(d[0]["state"], "Free") << "what the host store says; keptFor says why it is withheld";
}

TEST_F(NodeStatusTest, OnlyChangesAndRefreshesAreWritten) {
  NodeStatusWriter writer(*client_);
  ASSERT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", View(), FromEpochMillis(1'795'000'000'000)),
                 false)
          .ok());
  // Any request now fails: the same status later is not sent.
  sim_.server().faults().Add({.count = 100, .code = 500});
  EXPECT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", View(), FromEpochMillis(1'795'000'030'000)),
                 false)
          .ok());
  EXPECT_EQ(sim_.server().faults().Pending()[0].count, 100);
  // The refresh is sent (and fails here); a change is sent.
  EXPECT_FALSE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", View(), FromEpochMillis(1'795'000'060'000)),
                 true)
          .ok());
  sim_.server().faults().Clear();
  NodeView changed = View();
  changed.statuses[0].state = alloc::GpuState::kUnreserved;
  ASSERT_TRUE(
      writer
          .Write(NodeGpuStatusObject("node-a", "", changed, FromEpochMillis(1'795'000'090'000)),
                 false)
          .ok());
  EXPECT_EQ(Read()["status"]["summary"]["free"], 0);
  EXPECT_EQ(Read()["status"]["updateTime"], std::string("2026-11-18T11:08:10Z"));
}

}  // namespace
}  // namespace canhazgpu::driver
