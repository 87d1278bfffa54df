// Prepared claims' status.devices: the entries, their merge with other
// drivers' entries, and their writes against the simulated API server
// (which checks them as a real one does: kubesim/claim_status_rules.h).
#include "driver/claim_device_status.h"

#include <chrono>
#include <functional>
#include <thread>

#include "dra/test_pools.h"
#include "driver/claim_status_reporter.h"
#include "driver/testing/allocated_claim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/testing/test_api_server.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "gpu.canhazgpu.dev";
constexpr char kStatusShareA[] = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
constexpr char kStatusShareB[] = "1a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d";

NodeDevices TestNode() {
  return NodeDevices{
      .pool = dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a")};
}

CheckpointDevice ShareDevice(const std::string& device, const std::string& share, uint64_t gib) {
  return {.requests = {"gpu"},
          .pool = "node-a",
          .device = device,
          .share_id = share,
          .memory = gib << 30,
          .shareable = uint64_t{39} << 30,
          .isolation = "mps-dmem"};
}

CheckpointClaim Completed(std::vector<CheckpointDevice> devices) {
  return {.uid = "uid-1",
          .namespace_name = "ml",
          .name = "train",
          .state = PrepareState::kCompleted,
          .devices = std::move(devices)};
}

TEST(ClaimDeviceStatusTest, EntriesSayWhatEachDeviceAndShareGot) {
  const CheckpointClaim claim =
      Completed({ShareDevice("gpu-0", kStatusShareA, 10),
                 {.requests = {"whole"}, .pool = "node-a", .device = "gpu-1", .gpu = 1},
                 {.requests = {"again"}, .pool = "node-a", .device = "gpu-1", .gpu = 1}});
  const json entries = DeviceStatusEntries(claim, TestNode(), kDriver);
  ASSERT_EQ(entries.size(), 2u) << entries.dump(2);  // gpu-1 once
  const json& share = entries[0];
  EXPECT_EQ(share["driver"], kDriver);
  EXPECT_EQ(share["pool"], "node-a");
  EXPECT_EQ(share["device"], "gpu-0");
  EXPECT_EQ(share["shareID"], kStatusShareA);
  EXPECT_EQ(share["data"], (json{{"uuid", "GPU-00000000"},
                                 {"memory", "10Gi"},
                                 {"shareableMemory", "39Gi"},
                                 // never more than a pod's share gets
                                 {"memoryIsolation", "mps"}}));
  ASSERT_EQ(share["conditions"].size(), 1u);
  EXPECT_EQ(share["conditions"][0]["type"], "Ready");
  EXPECT_EQ(share["conditions"][0]["status"], "True");
  EXPECT_EQ(share["conditions"][0]["reason"], "Prepared");
  EXPECT_THAT(share["conditions"][0]["message"].get<std::string>(),
              ::testing::HasSubstr("share of 10Gi of gpu-0"));
  EXPECT_FALSE(share["conditions"][0].contains("lastTransitionTime"));  // added when written
  const json& whole = entries[1];
  EXPECT_FALSE(whole.contains("shareID"));
  EXPECT_EQ(whole["data"], (json{{"uuid", "GPU-00000001"}}));

  // Only completed claims are reported.
  std::map<std::string, CheckpointClaim> claims = {{"uid-1", claim}};
  claims["uid-2"] = claim;
  claims["uid-2"].state = PrepareState::kStarted;
  const auto desired = DesiredClaimStatuses(claims, TestNode(), kDriver);
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired.at("uid-1").name, "train");
  EXPECT_EQ(desired.at("uid-1").entries, entries);
}

TEST(ClaimDeviceStatusTest, MergeKeepsOthersEntriesAndAnUnchangedTransitionTime) {
  const json other = {{"driver", "net.example.com"}, {"pool", "node-a"}, {"device", "eth1"}};
  const json other_node = {{"driver", kDriver}, {"pool", "node-b"}, {"device", "gpu-0"}};
  const json ours = DeviceStatusEntries(
      Completed({ShareDevice("gpu-0", kStatusShareA, 10), ShareDevice("gpu-1", kStatusShareB, 5)}),
      TestNode(), kDriver);
  json before = ours[0];
  before["conditions"][0]["lastTransitionTime"] = "2026-11-29T12:00:00Z";
  json stale = ours[0];
  stale["device"] = "gpu-9";  // ours, no longer prepared
  const json current = {stale, other, before, other_node};
  const json merged = MergeDeviceStatuses(current, ours, kDriver, "node-a", "2026-11-29T13:00:00Z");
  ASSERT_EQ(merged.size(), 4u) << merged.dump(2);
  EXPECT_EQ(merged[0], other);
  EXPECT_EQ(merged[1], other_node);
  EXPECT_EQ(merged[2]["device"], "gpu-0");
  EXPECT_EQ(merged[2]["conditions"][0]["lastTransitionTime"], "2026-11-29T12:00:00Z");
  EXPECT_EQ(merged[3]["device"], "gpu-1");
  EXPECT_EQ(merged[3]["conditions"][0]["lastTransitionTime"], "2026-11-29T13:00:00Z");
  // Nothing of ours: only the others stay.
  EXPECT_EQ(MergeDeviceStatuses(current, json::array(), kDriver, "node-a", "t"),
            json({other, other_node}));
  EXPECT_EQ(MergeDeviceStatuses(json(), json::array(), kDriver, "node-a", "t"), json::array());
}

class ClaimDeviceStatusApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ =
        kube::Client::Create(sim_.Config(), {.qps = 1000, .burst = 1000, .max_retries = 0}).value();
    ASSERT_TRUE(
        client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", "ml"}}}}).ok());
  }
  json Devices(const std::string& name) {
    const json claim = client_->Get(kube::kResourceClaims, "ml", name).value_or(json::object());
    const json::json_pointer at("/status/devices");
    return claim.contains(at) ? claim.at(at) : json::array();
  }
  // Adds a device of another driver to the claim's allocation, with its
  // driver's status entry.
  void AddOtherDriversDevice(const std::string& name, const json& entry) {
    json claim = client_->Get(kube::kResourceClaims, "ml", name).value();
    claim["status"]["allocation"]["devices"]["results"].push_back({{"request", "gpu"},
                                                                   {"driver", "net.example.com"},
                                                                   {"pool", "node-a"},
                                                                   {"device", "eth1"}});
    claim["status"]["devices"] = json::array({entry});  // {entry} is a copy with clang (CWG 2137)
    ASSERT_TRUE(client_->UpdateStatus(kube::kResourceClaims, "ml", claim).ok());
  }

  kubesim::TestApiServer sim_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(ClaimDeviceStatusApiTest, WritesOursKeepsOthersAndRemovesOursAtUnprepare) {
  absl::StatusOr<ClaimRef> ref = testing::CreateAllocatedShareClaim(
      *client_, "ml", "train", {{.device = "gpu-0", .share_id = kStatusShareA, .memory = "10Gi"}});
  ASSERT_TRUE(ref.ok()) << ref.status();
  const json other = {{"driver", "net.example.com"},
                      {"pool", "node-a"},
                      {"device", "eth1"},
                      {"data", {{"interface", "eth1"}}}};
  AddOtherDriversDevice("train", other);
  CheckpointClaim claim = Completed({ShareDevice("gpu-0", kStatusShareA, 10)});
  claim.uid = ref->uid;
  const json ours = DeviceStatusEntries(claim, TestNode(), kDriver);
  ASSERT_TRUE(WriteClaimDeviceStatus(*client_, "ml", "train", ref->uid, ours, kDriver, "node-a",
                                     "2026-11-29T13:00:00Z")
                  .ok());
  json devices = Devices("train");
  ASSERT_EQ(devices.size(), 2u) << devices.dump(2);
  EXPECT_EQ(devices[0], other);
  EXPECT_EQ(devices[1]["shareID"], kStatusShareA);
  EXPECT_EQ(devices[1]["conditions"][0]["lastTransitionTime"], "2026-11-29T13:00:00Z");
  // The same again writes nothing (the resourceVersion stays).
  const std::string version =
      client_->Get(kube::kResourceClaims, "ml", "train").value()["metadata"]["resourceVersion"];
  ASSERT_TRUE(WriteClaimDeviceStatus(*client_, "ml", "train", ref->uid, ours, kDriver, "node-a",
                                     "2026-11-29T14:00:00Z")
                  .ok());
  EXPECT_EQ(
      client_->Get(kube::kResourceClaims, "ml", "train").value()["metadata"]["resourceVersion"],
      version);
  // A device the allocation does not have is left out, not refused.
  json extra = ours;
  extra.push_back(ours[0]);
  extra[1]["device"] = "gpu-1";
  ASSERT_TRUE(
      WriteClaimDeviceStatus(*client_, "ml", "train", ref->uid, extra, kDriver, "node-a", "t")
          .ok());
  EXPECT_EQ(Devices("train").size(), 2u);

  // Unprepared: ours go, the other driver's stay.
  ASSERT_TRUE(WriteClaimDeviceStatus(*client_, "ml", "train", ref->uid, json::array(), kDriver,
                                     "node-a", "t")
                  .ok());
  EXPECT_EQ(Devices("train"), json::array({other}));
  // Another claim of that name, or none: nothing to do, and no error.
  EXPECT_TRUE(
      WriteClaimDeviceStatus(*client_, "ml", "train", "other-uid", ours, kDriver, "node-a", "t")
          .ok());
  EXPECT_EQ(Devices("train"), json::array({other}));
  ASSERT_TRUE(client_->Delete(kube::kResourceClaims, "ml", "train").ok());
  EXPECT_TRUE(
      WriteClaimDeviceStatus(*client_, "ml", "train", ref->uid, ours, kDriver, "node-a", "t").ok());
}

bool EventuallyTrue(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST_F(ClaimDeviceStatusApiTest, TheReporterRetriesAWriteTheServerRefusedAndNeverBlocks) {
  absl::StatusOr<ClaimRef> a = testing::CreateAllocatedShareClaim(
      *client_, "ml", "a", {{.device = "gpu-0", .share_id = kStatusShareA, .memory = "10Gi"}});
  absl::StatusOr<ClaimRef> b = testing::CreateAllocatedShareClaim(
      *client_, "ml", "b", {{.device = "gpu-0", .share_id = kStatusShareB, .memory = "20Gi"}});
  ASSERT_TRUE(a.ok() && b.ok());
  std::map<std::string, CheckpointClaim> prepared;
  prepared[a->uid] = Completed({ShareDevice("gpu-0", kStatusShareA, 10)});
  prepared[a->uid].name = "a";
  prepared[b->uid] = Completed({ShareDevice("gpu-0", kStatusShareB, 20)});
  prepared[b->uid].name = "b";
  // The API server refuses the first writes: the reporter says so, and tries again.
  sim_.server().faults().Add(
      {.verb = "update", .resource = "resourceclaims/status", .count = 2, .code = 503});
  ClaimStatusReporter reporter(
      *client_, {.driver = kDriver, .pool = "node-a", .retry = std::chrono::milliseconds(50)},
      RealClock());
  reporter.Set(DesiredClaimStatuses(prepared, TestNode(), kDriver));
  ASSERT_TRUE(EventuallyTrue([&] { return Devices("a").size() == 1 && Devices("b").size() == 1; }))
      << Devices("a").dump() << Devices("b").dump();
  EXPECT_EQ(reporter.failures(), 2);
  EXPECT_EQ(Devices("a")[0]["shareID"], kStatusShareA);
  EXPECT_EQ(Devices("b")[0]["shareID"], kStatusShareB);
  EXPECT_TRUE(reporter.Settled(std::chrono::seconds(5)));

  // b unprepared: its entry goes, a's stays.
  prepared.erase(b->uid);
  reporter.Set(DesiredClaimStatuses(prepared, TestNode(), kDriver));
  ASSERT_TRUE(EventuallyTrue([&] { return Devices("b").empty(); })) << Devices("b").dump();
  EXPECT_TRUE(reporter.Settled(std::chrono::seconds(5)));
  EXPECT_EQ(Devices("a").size(), 1u);
  reporter.Stop();
}

}  // namespace
}  // namespace canhazgpu::driver
