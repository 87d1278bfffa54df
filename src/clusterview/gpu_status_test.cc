#include "clusterview/gpu_status.h"

#include "clusterview/testing/status_objects.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;
using testing::ClaimObject;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeGpuStatusObject;
using testing::NodeObject;
using testing::PodObject;
using testing::SliceObject;

// 2026-11-24T10:00:00Z
const TimePoint kNow = FromEpochMillis(1'795'514'400'000);
constexpr char kNowText[] = "2026-11-24T10:00:00Z";

dra::DevicePool Gpus(const std::string& node, int n) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(dra::testing::TestGpu(i));
  return dra::BuildDevicePool(gpus, node);
}

// A GPU of NVIDIA's driver: its attributes in the gpu.nvidia.com domain.
dra::DevicePool NvidiaGpus(const std::string& node, int n) {
  dra::DevicePool pool;
  pool.driver = "gpu.nvidia.com";
  pool.pool = node;
  for (int i = 0; i < n; ++i) {
    dra::Device d;
    d.name = StrCat("gpu-", i);
    d.attributes["type"] = dra::AttributeValue::String("gpu");
    d.attributes["productName"] = dra::AttributeValue::String("NVIDIA H100 80GB HBM3");
    d.capacity["memory"] = 80LL << 30;
    pool.devices.push_back(d);
  }
  return pool;
}

class GpuStatusTest : public ::testing::Test {
 protected:
  void AddNode(const std::string& name) { view_.nodes[name] = NodeObject(name); }
  void AddSlices(const std::vector<dra::DevicePool>& pools) {
    for (const dra::DevicePool& p : pools) slices_.push_back(SliceObject(p));
    view_.pools = PoolsFromJson(slices_);
  }
  void Add(const json& object) {
    const std::string kind = object["kind"];
    (kind == "Pod" ? view_.pods : view_.claims)[KeyOf(object)] = object;
  }
  GpuStatusReport Status(const GpuStatusOptions& options = {}) {
    absl::StatusOr<GpuStatusReport> report = GpuStatus(view_, kNow, options);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : GpuStatusReport{};
  }
  const GpuRow& Row(const GpuStatusReport& report, const std::string& node,
                    const std::string& device) {
    for (const GpuRow& r : report.rows) {
      if (r.node == node && r.device == device) return r;
    }
    ADD_FAILURE() << "no row " << node << " " << device;
    static const GpuRow kNone;
    return kNone;
  }
  std::vector<std::string> Cells(const GpuStatusReport& report, const std::string& node,
                                 const std::string& device) {
    TextRows rows = StatusRows(report);
    for (const auto& r : rows.rows) {
      if (r[0] == node && r[1] == device) return r;
    }
    ADD_FAILURE() << "no table row " << node << " " << device;
    return {};
  }

  View view_;
  std::vector<json> slices_;
};

TEST_F(GpuStatusTest, FreeDevicesComeFromTheSlices) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 2)});
  GpuStatusReport report = Status();
  ASSERT_EQ(report.rows.size(), 2u);
  const GpuRow& r = report.rows[0];
  EXPECT_EQ(r.node, "node-a");
  EXPECT_EQ(r.device, "gpu-0");
  EXPECT_EQ(r.driver, "gpu.canhazgpu.dev");
  EXPECT_EQ(r.type, "gpu");
  EXPECT_EQ(r.product, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(r.memory_bytes, 40LL << 30);
  EXPECT_EQ(r.state, GpuState::kFree);
  EXPECT_THAT(
      Cells(report, "node-a", "gpu-1"),
      ElementsAre("node-a", "gpu-1", "gpu", "NVIDIA A100-SXM4-40GB", "40Gi", "Free", "-", "-", ""));
}

// Issue 34: a GPU shared by memory lists each share and what is left.
TEST_F(GpuStatusTest, SharedGpuShowsEachShareAndWhatIsLeft) {
  AddNode("node-a");
  AddSlices({dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a",
                                  {.sharing = true})});
  Add(PodObject("ml", "train-0", "node-a", "alice", "2026-11-24T08:30:00Z"));
  Add(PodObject("ml", "eval-0", "node-a", "bob", "2026-11-24T09:30:00Z"));
  for (const auto& [claim, pod, memory] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"train-gpu", "train-0", "30Gi"}, {"eval-gpu", "eval-0", "8Gi"}}) {
    json c = ClaimObject("ml", claim, "node-a", {"gpu-0"}, {pod});
    json& result = c["status"]["allocation"]["devices"]["results"][0];
    result["shareID"] = claim == "train-gpu" ? "11111111-2222-4333-8444-555555555555"
                                             : "66666666-7777-4888-8999-aaaaaaaaaaaa";
    result["consumedCapacity"] = {{"memory", memory}};
    Add(c);
  }
  GpuStatusReport report = Status();
  const GpuRow& r = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(r.state, GpuState::kClaimed);
  EXPECT_TRUE(r.shared);
  ASSERT_EQ(r.claims.size(), 2u);
  EXPECT_EQ(r.memory_left, (40448LL - 38 * 1024) << 20);  // 1536Mi
  std::vector<std::string> cells = Cells(report, "node-a", "gpu-0");
  EXPECT_EQ(cells[4], "40448Mi");
  EXPECT_THAT(cells[6], HasSubstr("alice (from label; ml/train-0) 30Gi"));
  EXPECT_THAT(cells[6], HasSubstr("bob (from label; ml/eval-0) 8Gi"));
  EXPECT_THAT(cells[8], ::testing::StartsWith("shared: 1536Mi of 40448Mi left; claims "));
  const GpuRow& free = Row(report, "node-a", "gpu-1");
  EXPECT_TRUE(free.shared);
  EXPECT_EQ(free.memory_left, 40448LL << 20);
  const nlohmann::ordered_json j = StatusJson(report, false);
  EXPECT_EQ(j["devices"][0]["shared"], true);
  EXPECT_EQ(j["devices"][0]["memoryLeftBytes"], 1536LL << 20);
  EXPECT_EQ(j["devices"][0]["claims"][0]["memoryBytes"].get<int64_t>() +
                j["devices"][0]["claims"][1]["memoryBytes"].get<int64_t>(),
            38LL << 30);
  EXPECT_FALSE(j["devices"][0]["claims"][0]["shareID"].get<std::string>().empty());
}

TEST_F(GpuStatusTest, ClaimedShowsPodsUserAndHowLong) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 2)});
  Add(PodObject("ml", "train-0", "node-a", "alice", "2026-11-24T08:30:00Z"));
  Add(ClaimObject("ml", "train-gpu", "node-a", {"gpu-1"}, {"train-0"}, dra::kDriverName,
                  "2026-11-24T08:00:00Z"));
  GpuStatusReport report = Status();
  const GpuRow& r = Row(report, "node-a", "gpu-1");
  EXPECT_EQ(r.state, GpuState::kClaimed);
  ASSERT_EQ(r.claims.size(), 1u);
  EXPECT_EQ(r.claims[0].namespace_name, "ml");
  EXPECT_EQ(r.claims[0].name, "train-gpu");
  ASSERT_EQ(r.claims[0].pods.size(), 1u);
  EXPECT_EQ(r.claims[0].pods[0].name, "train-0");
  EXPECT_EQ(r.claims[0].pods[0].namespace_name, "ml");
  EXPECT_EQ(r.claims[0].user, "alice");
  // The pod's start, not the claim's creation.
  ASSERT_TRUE(r.claims[0].since.has_value());
  EXPECT_EQ(*r.claims[0].since, kNow - std::chrono::minutes(90));
  std::vector<std::string> cells = Cells(report, "node-a", "gpu-1");
  EXPECT_EQ(cells[5], "Claimed");
  EXPECT_EQ(cells[6], "alice (from label; ml/train-0)");
  EXPECT_EQ(cells[7], "1h 30m");
  EXPECT_EQ(cells[8], "claim ml/train-gpu");
  EXPECT_EQ(Row(report, "node-a", "gpu-0").state, GpuState::kFree);
}

// Issue 33: a run's --note is shown beside what it holds.
TEST_F(GpuStatusTest, ClaimedShowsTheRunsNote) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 1)});
  json pod = PodObject("ml", "train-0", "node-a", "alice", "2026-11-24T08:30:00Z");
  pod["metadata"]["annotations"][kNoteAnnotation] = "lr sweep 3";
  Add(pod);
  Add(ClaimObject("ml", "train-gpu", "node-a", {"gpu-0"}, {"train-0"}, dra::kDriverName,
                  "2026-11-24T08:00:00Z"));
  GpuStatusReport report = Status();
  EXPECT_EQ(Row(report, "node-a", "gpu-0").claims.at(0).note, "lr sweep 3");
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[8], "\"lr sweep 3\"; claim ml/train-gpu");
  EXPECT_EQ(StatusJson(report)["devices"][0]["claims"][0]["note"], "lr sweep 3");
}

TEST_F(GpuStatusTest, ClaimUserAndSinceFallBacks) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 3)});
  // A pod without the label: the claim's label is the user.
  Add(PodObject("ml", "p1", "node-a", "", "2026-11-24T09:00:00Z"));
  json labelled = ClaimObject("ml", "c1", "node-a", {"gpu-0"}, {"p1"});
  labelled["metadata"]["labels"] = {{"canhazgpu.dev/user", "bob"}};
  Add(labelled);
  // No pod reserved yet: since the claim was created; no user.
  Add(ClaimObject("ml", "c2", "node-a", {"gpu-1"}, {}, dra::kDriverName, "2026-11-24T09:55:00Z"));
  // The server's allocationTimestamp wins over everything.
  json stamped =
      ClaimObject("ml", "c3", "node-a", {"gpu-2"}, {}, dra::kDriverName, "2026-11-24T09:00:00Z");
  stamped["status"]["allocation"]["allocationTimestamp"] = "2026-11-24T09:59:00Z";
  Add(stamped);
  GpuStatusReport report = Status();
  EXPECT_EQ(Row(report, "node-a", "gpu-0").claims[0].user, "bob");
  EXPECT_EQ(*Row(report, "node-a", "gpu-0").claims[0].since, kNow - std::chrono::hours(1));
  EXPECT_EQ(Row(report, "node-a", "gpu-1").claims[0].user, "");
  EXPECT_EQ(*Row(report, "node-a", "gpu-1").claims[0].since, kNow - std::chrono::minutes(5));
  EXPECT_EQ(*Row(report, "node-a", "gpu-2").claims[0].since, kNow - std::chrono::minutes(1));
  std::vector<std::string> cells = Cells(report, "node-a", "gpu-1");
  EXPECT_EQ(cells[6], "claim ml/c2");
  EXPECT_EQ(cells[7], "5m 0s");
  EXPECT_EQ(cells[8], "claim ml/c2 (no pod yet)");
}

TEST_F(GpuStatusTest, LocallyHeldDevicesWithdrawnFromTheSliceAreStillListed) {
  AddNode("node-a");
  dra::DevicePool pool = Gpus("node-a", 4);
  dra::DevicePool published = pool;
  published.devices.erase(published.devices.begin() + 2);  // the node driver withheld gpu-2
  AddSlices({published});
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a",
      {{{"name", "gpu-2"},
        {"type", "gpu"},
        {"productName", "NVIDIA A100-SXM4-40GB"},
        {"state", "Held"},
        {"held",
         {{"user", "bob"},
          {"kind", "Manual"},
          {"since", "2026-11-24T09:00:00Z"},
          {"until", "2026-11-24T11:05:00Z"}}}},
       {{"name", "gpu-3"},
        {"type", "gpu"},
        {"state", "Held"},
        {"held", {{"user", "carol"}, {"kind", "Run"}, {"since", "2026-11-24T09:50:00Z"}}}}},
      kNowText);
  GpuStatusReport report = Status();
  ASSERT_EQ(report.rows.size(), 4u);
  const GpuRow& r = Row(report, "node-a", "gpu-2");
  EXPECT_EQ(r.state, GpuState::kHeld);
  ASSERT_TRUE(r.held.has_value());
  EXPECT_EQ(r.held->user, "bob");
  EXPECT_EQ(r.held->kind, "Manual");
  EXPECT_EQ(*r.held->since, kNow - std::chrono::hours(1));
  EXPECT_EQ(*r.held->until, kNow + std::chrono::minutes(65));
  EXPECT_EQ(r.product, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(r.memory_bytes, 0);  // not in the slice: unknown
  std::vector<std::string> cells = Cells(report, "node-a", "gpu-2");
  EXPECT_THAT(cells,
              ElementsAre("node-a", "gpu-2", "gpu", "NVIDIA A100-SXM4-40GB", "-", "Held",
                          "bob (canhazgpu)", "1h 0m", "until 2026-11-24T11:05:00Z (in 1h 5m)"));
  // gpu-3 is in the slice and held by a run: no expiry.
  EXPECT_EQ(Row(report, "node-a", "gpu-3").state, GpuState::kHeld);
  EXPECT_FALSE(Row(report, "node-a", "gpu-3").held->until.has_value());
  EXPECT_EQ(Cells(report, "node-a", "gpu-3")[8], "while its command runs");
}

// The node keeps gpu-1 whole for dave, waiting in the host's queue, and
// 20Gi of gpu-0 for erin's waiting share.
TEST_F(GpuStatusTest, DevicesKeptForLocalWaitersSayForWhom) {
  AddNode("node-a");
  dra::DevicePool pool = Gpus("node-a", 2);
  dra::DevicePool published = pool;
  published.devices.pop_back();  // gpu-1 withheld
  AddSlices({published});
  view_.node_gpu_statuses["node-a"] =
      NodeGpuStatusObject("node-a",
                          {{{"name", "gpu-0"},
                            {"type", "gpu"},
                            {"state", "Free"},
                            {"keptFor", {{{"user", "erin"}, {"memory", "20Gi"}}}}},
                           {{"name", "gpu-1"},
                            {"type", "gpu"},
                            {"state", "Free"},
                            {"keptFor", {{{"user", "dave"}, {"since", "2026-11-24T09:50:00Z"}}}}}},
                          kNowText);
  GpuStatusReport report = Status();
  const GpuRow& kept = Row(report, "node-a", "gpu-1");
  EXPECT_EQ(kept.state, GpuState::kHeld);
  ASSERT_TRUE(kept.held.has_value());
  EXPECT_EQ(kept.held->kind, kQueuedHold);
  EXPECT_THAT(Cells(report, "node-a", "gpu-1"),
              ElementsAre("node-a", "gpu-1", "gpu", "-", "-", "Held", "dave (canhazgpu queue)",
                          "10m 0s", "kept for dave (waiting in the host's queue)"));
  EXPECT_EQ(Row(report, "node-a", "gpu-0").state, GpuState::kFree);
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[8],
            "kept for erin 20Gi (waiting in the host's queue)");
  EXPECT_EQ(StatusJson(report, false)["devices"][0]["keptFor"],
            nlohmann::ordered_json({"erin 20Gi"}));
}

TEST_F(GpuStatusTest, InUseWithoutReservationShowsUsersAndMemory) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 2)});
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a", {{{"name", "gpu-0"},
                  {"type", "gpu"},
                  {"state", "InUse"},
                  {"usage", {{"memoryUsedBytes", 2LL << 30}, {"users", {"carol", "dave"}}}}},
                 {{"name", "gpu-1"}, {"type", "gpu"}, {"state", "Free"}}});
  GpuStatusReport report = Status();
  const GpuRow& r = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(r.state, GpuState::kInUse);
  ASSERT_TRUE(r.usage.has_value());
  EXPECT_THAT(r.usage->users, ElementsAre("carol", "dave"));
  EXPECT_EQ(r.usage->memory_used_bytes, 2LL << 30);
  std::vector<std::string> cells = Cells(report, "node-a", "gpu-0");
  EXPECT_EQ(cells[5], "InUse");
  EXPECT_EQ(cells[6], "carol, dave");
  EXPECT_EQ(cells[8], "no reservation, 2Gi used");
  EXPECT_EQ(Row(report, "node-a", "gpu-1").state, GpuState::kFree);
}

TEST_F(GpuStatusTest, TaintsFromSliceAndNodeStatusSayWhy) {
  AddNode("node-a");
  dra::DevicePool pool = Gpus("node-a", 4);
  pool.devices[0].taints = {{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}};
  pool.devices[1].taints = {{"maintenance", "", "None"}};                 // informs only
  pool.devices[3].taints = {{"gpu.canhazgpu.dev/ecc", "", "NoExecute"}};  // and claimed
  AddSlices({pool});
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a", {{{"name", "gpu-0"},
                  {"type", "gpu"},
                  {"state", "Free"},
                  {"taints",
                   {{{"key", "gpu.canhazgpu.dev/xid"},
                     {"value", "79"},
                     {"effect", "NoSchedule"},
                     {"reason", "fatal XID 79, GPU lost"},
                     {"source", "Driver"}}}}},
                 {{"name", "gpu-2"},
                  {"type", "gpu"},
                  {"state", "Free"},
                  {"taints", {{{"key", "gpu.canhazgpu.dev/health"}, {"effect", "NoSchedule"}}}}}});
  Add(ClaimObject("ml", "c", "node-a", {"gpu-3"}));
  GpuStatusReport report = Status();

  const GpuRow& xid = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(xid.state, GpuState::kTainted);
  ASSERT_EQ(xid.taints.size(), 1u);  // the same taint in both places is shown once
  EXPECT_EQ(xid.taints[0].ToString(), "gpu.canhazgpu.dev/xid=79:NoSchedule");
  EXPECT_EQ(xid.taints[0].reason, "fatal XID 79, GPU lost");
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[8],
            "taint gpu.canhazgpu.dev/xid=79:NoSchedule (fatal XID 79, GPU lost)");

  EXPECT_EQ(Row(report, "node-a", "gpu-1").state, GpuState::kFree);
  EXPECT_EQ(Cells(report, "node-a", "gpu-1")[8], "taint maintenance:None");

  const GpuRow& health = Row(report, "node-a", "gpu-2");
  EXPECT_EQ(health.state, GpuState::kTainted);
  EXPECT_EQ(health.taints[0].source, "NodeGpuStatus");
  EXPECT_EQ(Cells(report, "node-a", "gpu-2")[8], "taint gpu.canhazgpu.dev/health:NoSchedule");

  EXPECT_EQ(Row(report, "node-a", "gpu-3").state, GpuState::kClaimed);
  EXPECT_EQ(Cells(report, "node-a", "gpu-3")[8],
            "claim ml/c (no pod yet); taint gpu.canhazgpu.dev/ecc:NoExecute");
}

TEST_F(GpuStatusTest, NodesOfOtherDriversFromSlicesAndClaimsAlone) {
  AddNode("h100-1");
  AddSlices({NvidiaGpus("h100-1", 2)});
  Add(PodObject("team", "infer", "h100-1", "erin", "2026-11-24T09:30:00Z"));
  Add(ClaimObject("team", "infer-gpu", "h100-1", {"gpu-1"}, {"infer"}, "gpu.nvidia.com"));
  GpuStatusReport report = Status();
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(report.rows[0].product, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(report.rows[0].memory_bytes, 80LL << 30);
  EXPECT_EQ(report.rows[0].state, GpuState::kFree);
  EXPECT_EQ(report.rows[1].state, GpuState::kClaimed);
  EXPECT_EQ(report.rows[1].claims[0].user, "erin");
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_FALSE(report.nodes[0].status_updated.has_value());
}

TEST_F(GpuStatusTest, OnlyGpuAndMigDevicesAreListed) {
  AddNode("node-a");
  dra::DevicePool nics;
  nics.driver = "nic.example.com";
  nics.pool = "node-a";
  dra::Device nic;
  nic.name = "eth1";
  nic.attributes["type"] = dra::AttributeValue::String("nic");
  nics.devices.push_back(nic);
  AddSlices({Gpus("node-a", 1), nics});
  GpuStatusReport report = Status();
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].device, "gpu-0");
}

TEST_F(GpuStatusTest, SortedByNodeThenDeviceInNaturalOrder) {
  for (const char* n : {"node-10", "node-2"}) AddNode(n);
  AddSlices({Gpus("node-10", 1), Gpus("node-2", 12)});
  GpuStatusReport report = Status();
  std::vector<std::string> order;
  for (const GpuRow& r : report.rows) order.push_back(StrCat(r.node, ":", r.device));
  EXPECT_EQ(order[0], "node-2:gpu-0");
  EXPECT_EQ(order[2], "node-2:gpu-2");
  EXPECT_EQ(order[10], "node-2:gpu-10");
  EXPECT_EQ(order[12], "node-10:gpu-0");
  EXPECT_TRUE(NaturalLess("gpu-2", "gpu-10"));
  EXPECT_FALSE(NaturalLess("gpu-10", "gpu-2"));
  EXPECT_TRUE(NaturalLess("gpu-0-mig-1g5gb-19-0", "gpu-0-mig-1g5gb-19-1"));
  EXPECT_TRUE(NaturalLess("gpu-1", "gpu-1-mig"));
  EXPECT_FALSE(NaturalLess("a", "a"));
}

TEST_F(GpuStatusTest, AGpuBesideItsClaimedMigInstanceIsUnavailable) {
  AddNode("node-a");
  dra::DevicePool pool = dra::BuildDevicePool({dra::testing::TestMigGpu(0)}, "node-a");
  AddSlices({pool});
  std::vector<std::string> names;
  for (const dra::Device& d : pool.devices) names.push_back(d.name);
  ASSERT_EQ(names.size(), 4u);       // gpu-0 and its three instances
  const std::string big = names[3];  // 3g.20gb
  ASSERT_THAT(big, HasSubstr("3g20gb"));
  Add(ClaimObject("ml", "slice", "node-a", {big}));
  GpuStatusReport report = Status();
  const GpuRow& gpu = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(gpu.state, GpuState::kUnavailable);
  EXPECT_THAT(gpu.blocked_by, ElementsAre(big));
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[8], "GPU shared with " + big);
  EXPECT_EQ(Row(report, "node-a", big).state, GpuState::kClaimed);
  EXPECT_EQ(Row(report, "node-a", big).type, "mig");
  // The small instances still fit beside it.
  EXPECT_EQ(Row(report, "node-a", names[1]).state, GpuState::kFree);
  EXPECT_EQ(Row(report, "node-a", names[2]).state, GpuState::kFree);
}

TEST_F(GpuStatusTest, PreparedForAClaimTheApiNoLongerHasIsStillClaimed) {
  AddNode("node-a");
  AddSlices({Gpus("node-a", 2)});
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a", {{{"name", "gpu-0"},
                  {"type", "gpu"},
                  {"state", "Prepared"},
                  {"claims", {{{"namespace", "ml"}, {"name", "gone"}, {"pods", {"p"}}}}}}});
  GpuStatusReport report = Status();
  const GpuRow& r = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(r.state, GpuState::kClaimed);
  EXPECT_EQ(r.claims[0].name, "gone");
  EXPECT_EQ(r.claims[0].pods[0].name, "p");
  EXPECT_FALSE(r.claims[0].since.has_value());
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[7], "-");
}

// A GPU the node reports Shared: by local users alone it is held by them
// (as before shares); a claim the API no longer has keeps its share.
TEST_F(GpuStatusTest, ASharedGpuTheNodeReportsIsHeldByItsLocalSharesOrClaimed) {
  AddNode("node-a");
  AddSlices({dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a",
                                  {.sharing = true})});
  const json local = {{"shareID", "s-1"},
                      {"user", "carol"},
                      {"kind", "Manual"},
                      {"memory", "10Gi"},
                      {"since", "2026-11-24T09:00:00Z"},
                      {"until", "2026-11-24T11:00:00Z"}};
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a",
      {{{"name", "gpu-0"},
        {"type", "gpu"},
        {"state", "Shared"},
        {"sharing",
         {{"shareableMemory", "40448Mi"}, {"freeMemory", "30208Mi"}, {"localShares", {local}}}}},
       {{"name", "gpu-1"},
        {"type", "gpu"},
        {"state", "Shared"},
        {"claims",
         {{{"namespace", "ml"},
           {"name", "gone"},
           {"pods", {"p"}},
           {"shareID", "s-2"},
           {"memory", "8Gi"}}}},
        {"sharing", {{"shareableMemory", "40448Mi"}, {"freeMemory", "32256Mi"}}}}});
  GpuStatusReport report = Status();
  const GpuRow& held = Row(report, "node-a", "gpu-0");
  EXPECT_EQ(held.state, GpuState::kHeld);
  ASSERT_TRUE(held.held.has_value());
  EXPECT_EQ(held.held->user, "carol");
  EXPECT_EQ(Cells(report, "node-a", "gpu-0")[6], "carol (canhazgpu)");
  const GpuRow& claimed = Row(report, "node-a", "gpu-1");
  EXPECT_EQ(claimed.state, GpuState::kClaimed);
  ASSERT_EQ(claimed.claims.size(), 1u);
  EXPECT_EQ(claimed.claims[0].share_id, "s-2");
  EXPECT_EQ(claimed.claims[0].memory_bytes, 8LL << 30);
  EXPECT_EQ(claimed.memory_left, (40448LL - 8 * 1024) << 20);
}

TEST_F(GpuStatusTest, NodeFilterAndUnknownNode) {
  for (const char* n : {"node-a", "node-b", "gpu-box"}) AddNode(n);
  AddSlices({Gpus("node-a", 2), Gpus("node-b", 3)});
  GpuStatusReport report = Status({.node = "node-b"});
  ASSERT_EQ(report.rows.size(), 3u);
  for (const GpuRow& r : report.rows) EXPECT_EQ(r.node, "node-b");
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].node, "node-b");

  // A node without GPUs: no rows, one summary line of zeros.
  report = Status({.node = "gpu-box"});
  EXPECT_THAT(report.rows, IsEmpty());
  ASSERT_EQ(report.nodes.size(), 1u);
  EXPECT_EQ(report.nodes[0].total, 0);

  absl::StatusOr<GpuStatusReport> unknown = GpuStatus(view_, kNow, {.node = "node-c"});
  ASSERT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(),
            "no node \"node-c\" in the cluster; closest: node-a, node-b, gpu-box");

  View empty;
  EXPECT_EQ(GpuStatus(empty, kNow, {.node = "x"}).status().message(),
            "no node \"x\": the cluster has no nodes");
}

TEST_F(GpuStatusTest, SummaryCountsEachStateOncePerNode) {
  for (const char* n : {"node-a", "node-b"}) AddNode(n);
  dra::DevicePool a = Gpus("node-a", 6);
  a.devices[4].taints = {{"xid", "79", "NoSchedule"}};
  dra::DevicePool published = a;
  published.devices.erase(published.devices.begin() + 2);  // held: withheld
  AddSlices({published, Gpus("node-b", 2)});
  Add(ClaimObject("ml", "c", "node-a", {"gpu-0", "gpu-1"}));
  view_.node_gpu_statuses["node-a"] = NodeGpuStatusObject(
      "node-a",
      {{{"name", "gpu-2"}, {"type", "gpu"}, {"state", "Held"}, {"held", {{"user", "bob"}}}},
       {{"name", "gpu-3"}, {"type", "gpu"}, {"state", "InUse"}}},
      "2026-11-24T09:59:30Z");
  GpuStatusReport report = Status();
  ASSERT_EQ(report.nodes.size(), 2u);
  const NodeSummary& s = report.nodes[0];
  EXPECT_EQ(s.node, "node-a");
  EXPECT_EQ(s.total, 6);
  EXPECT_EQ(s.claimed, 2);
  EXPECT_EQ(s.held, 1);
  EXPECT_EQ(s.in_use, 1);
  EXPECT_EQ(s.tainted, 1);
  EXPECT_EQ(s.free, 1);
  EXPECT_EQ(s.unavailable, 0);
  EXPECT_EQ(*s.status_updated, kNow - std::chrono::seconds(30));
  TextRows rows = SummaryRows(report);
  EXPECT_THAT(rows.headers, ElementsAre("NODE", "GPUS", "FREE", "CLAIMED", "HELD", "IN-USE",
                                        "TAINTED", "UNAVAILABLE", "MIG", "MIG-FREE"));
  EXPECT_THAT(rows.rows,
              ElementsAre(ElementsAre("node-a", "6", "1", "2", "1", "1", "1", "0", "-", "-"),
                          ElementsAre("node-b", "2", "2", "0", "0", "0", "0", "0", "-", "-")));
}

// Issue 33: a node of 4 GPUs, one in MIG mode with its instances, showed
// TOTAL 11. GPUs and MIG instances are counted apart, each device once: the
// GPU beside its claimed instance is one unavailable GPU, the instance one
// claimed MIG device.
TEST_F(GpuStatusTest, SummaryCountsGpusAndMigInstancesApart) {
  AddNode("node-a");
  dra::DevicePool pool =
      dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1),
                            dra::testing::TestGpu(2), dra::testing::TestMigGpu(3)},
                           "node-a");
  AddSlices({pool});
  std::vector<std::string> mig;
  for (const dra::Device& d : pool.devices)
    if (d.is_mig) mig.push_back(d.name);
  ASSERT_EQ(mig.size(), 3u);
  Add(ClaimObject("ml", "slice", "node-a", {mig[2]}));
  Add(ClaimObject("ml", "whole", "node-a", {"gpu-0"}));
  GpuStatusReport report = Status();
  ASSERT_EQ(report.nodes.size(), 1u);
  const NodeSummary& s = report.nodes[0];
  EXPECT_EQ(s.total, 4);
  EXPECT_EQ(s.claimed, 1);
  EXPECT_EQ(s.free, 2);
  EXPECT_EQ(s.unavailable, 1);  // gpu-3, beside its claimed instance
  EXPECT_EQ(s.mig.total, 3);
  EXPECT_EQ(s.mig.claimed, 1);
  EXPECT_EQ(s.mig.free, 2);
  EXPECT_THAT(SummaryRows(report).rows,
              ElementsAre(ElementsAre("node-a", "4", "2", "1", "0", "0", "0", "1", "3", "2")));
  const nlohmann::ordered_json j = StatusJson(report, /*summary_only=*/true);
  EXPECT_EQ(j["nodes"][0]["total"], 4);
  EXPECT_EQ(j["nodes"][0]["mig"]["total"], 3);
  EXPECT_EQ(j["nodes"][0]["mig"]["claimed"], 1);
}

TEST_F(GpuStatusTest, ProblemsOfUnreadableSlicesAreReported) {
  AddNode("node-a");
  json slice = SliceObject(Gpus("node-a", 1));
  slice["spec"]["pool"]["resourceSliceCount"] = 2;
  view_.pools = PoolsFromJson({slice});
  GpuStatusReport report = Status();
  EXPECT_THAT(report.rows, IsEmpty());
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_THAT(report.problems[0], HasSubstr("incomplete"));
}

TEST_F(GpuStatusTest, JsonShape) {
  AddNode("node-a");
  dra::DevicePool pool = Gpus("node-a", 4);
  pool.devices[3].taints = {{"xid", "79", "NoSchedule"}};
  dra::DevicePool published = pool;
  published.devices.erase(published.devices.begin() + 1);
  AddSlices({published});
  Add(PodObject("ml", "train-0", "node-a", "alice", "2026-11-24T09:00:00Z"));
  Add(ClaimObject("ml", "train-gpu", "node-a", {"gpu-0"}, {"train-0"}));
  view_.node_gpu_statuses["node-a"] =
      NodeGpuStatusObject("node-a",
                          {{{"name", "gpu-1"},
                            {"type", "gpu"},
                            {"state", "Held"},
                            {"held",
                             {{"user", "bob"},
                              {"kind", "Manual"},
                              {"since", "2026-11-24T09:30:00Z"},
                              {"until", "2026-11-24T11:00:00Z"}}},
                            {"usage", {{"memoryUsedBytes", 1024}, {"users", {"bob"}}}}}},
                          kNowText);
  const nlohmann::ordered_json j = StatusJson(Status());
  EXPECT_EQ(j.dump(), nlohmann::ordered_json::parse(R"({
    "nodes": [{"node": "node-a", "total": 4, "free": 1, "claimed": 1, "held": 1, "inUse": 0,
               "tainted": 1, "unavailable": 0,
               "mig": {"total": 0, "free": 0, "claimed": 0, "held": 0, "inUse": 0, "tainted": 0,
                       "unavailable": 0},
               "statusUpdateTime": "2026-11-24T10:00:00Z"}],
    "devices": [
      {"node": "node-a", "driver": "gpu.canhazgpu.dev", "device": "gpu-0", "type": "gpu",
       "product": "NVIDIA A100-SXM4-40GB", "memoryBytes": 42949672960, "state": "Claimed",
       "claims": [{"namespace": "ml", "name": "train-gpu",
                   "pods": [{"namespace": "ml", "name": "train-0"}], "user": "alice",
                   "since": "2026-11-24T09:00:00Z", "seconds": 3600}]},
      {"node": "node-a", "driver": "gpu.canhazgpu.dev", "device": "gpu-1", "type": "gpu",
       "product": "", "memoryBytes": 0, "state": "Held",
       "held": {"user": "bob", "kind": "Manual", "since": "2026-11-24T09:30:00Z",
                "until": "2026-11-24T11:00:00Z", "seconds": 1800},
       "usage": {"users": ["bob"], "memoryUsedBytes": 1024}},
      {"node": "node-a", "driver": "gpu.canhazgpu.dev", "device": "gpu-2", "type": "gpu",
       "product": "NVIDIA A100-SXM4-40GB", "memoryBytes": 42949672960, "state": "Free"},
      {"node": "node-a", "driver": "gpu.canhazgpu.dev", "device": "gpu-3", "type": "gpu",
       "product": "NVIDIA A100-SXM4-40GB", "memoryBytes": 42949672960, "state": "Tainted",
       "taints": [{"key": "xid", "value": "79", "effect": "NoSchedule", "reason": "",
                   "source": "ResourceSlice"}]}
    ],
    "problems": []
  })")
                          .dump());
  const nlohmann::ordered_json summary = StatusJson(Status(), /*summary_only=*/true);
  EXPECT_FALSE(summary.contains("devices"));
  EXPECT_EQ(summary["nodes"].size(), 1u);
  EXPECT_TRUE(summary["problems"].is_array());
}

}  // namespace
}  // namespace canhazgpu::clusterview
