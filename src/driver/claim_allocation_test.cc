#include "driver/claim_allocation.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Result(const std::string& request, const std::string& device,
            const std::string& driver = "gpu.canhazgpu.dev", const std::string& pool = "node-a") {
  return {{"request", request}, {"driver", driver}, {"pool", pool}, {"device", device}};
}

kube::ResourceClaim Claim(std::vector<json> results) {
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "train"}, {"namespace", "ml"}, {"uid", "uid-1"}}},
                {"spec", {{"devices", {{"requests", {{{"name", "gpu"}}}}}}}},
                {"status",
                 {{"allocation", {{"devices", {{"results", std::move(results)}}}}},
                  {"reservedFor", {{{"resource", "pods"}, {"name", "train-0"}, {"uid", "p1"}}}}}}};
  return kube::ResourceClaim::FromJson(claim).value();
}

TEST(ClaimAllocationTest, OurDevicesOnThisNodeWithTheirRequests) {
  kube::ResourceClaim claim =
      Claim({Result("gpu", "gpu-3"), Result("gpu", "gpu-5"), Result("nic", "eth1", "sriov.example"),
             Result("small", "gpu-3")});
  absl::StatusOr<ClaimAllocation> ours =
      OurAllocation(claim, "uid-1", "gpu.canhazgpu.dev", "node-a");
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(ours->namespace_name, "ml");
  EXPECT_EQ(ours->name, "train");
  ASSERT_EQ(ours->devices.size(), 2u);
  EXPECT_EQ(ours->devices[0].device, "gpu-3");
  EXPECT_THAT(ours->devices[0].requests, ElementsAre("gpu", "small"));
  EXPECT_EQ(ours->devices[1].device, "gpu-5");
  EXPECT_THAT(ours->pods, ElementsAre("train-0"));
}

TEST(ClaimAllocationTest, EachRefusalSaysWhatToDo) {
  auto refusal = [](const kube::ResourceClaim& claim, const std::string& uid) {
    absl::StatusOr<ClaimAllocation> r = OurAllocation(claim, uid, "gpu.canhazgpu.dev", "node-a");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    return std::string(r.status().message());
  };
  EXPECT_THAT(
      refusal(Claim({Result("gpu", "gpu-3")}), "uid-0"),
      HasSubstr("claim ml/train is now uid uid-1, not uid-0: it was deleted and made again"));
  kube::ResourceClaim unallocated = Claim(json::array());
  unallocated.status.allocation = {};
  EXPECT_THAT(refusal(unallocated, "uid-1"), HasSubstr("claim ml/train is not allocated yet"));
  EXPECT_THAT(refusal(Claim({Result("nic", "eth1", "sriov.example")}), "uid-1"),
              HasSubstr("has no device of driver gpu.canhazgpu.dev"));
  EXPECT_THAT(refusal(Claim({Result("gpu", "gpu-3", "gpu.canhazgpu.dev", "node-b")}), "uid-1"),
              HasSubstr("was allocated gpu-3 of pool node-b, but this node is node-a"));
}

TEST(ClaimAllocationTest, ASharesIdAndConsumedMemory) {
  json a = Result("gpu", "gpu-0");
  a["shareID"] = "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
  a["consumedCapacity"] = {{"memory", "10Gi"}};
  json b = Result("gpu", "gpu-0");
  b["shareID"] = "1b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
  b["consumedCapacity"] = {{"memory", "512Mi"}};
  absl::StatusOr<ClaimAllocation> got =
      OurAllocation(Claim({a, b, Result("gpu", "gpu-1")}), "uid-1", "gpu.canhazgpu.dev", "node-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->devices.size(), 3u);  // two shares of one GPU stay two
  EXPECT_EQ(got->devices[0].share_id, "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10");
  EXPECT_EQ(got->devices[0].memory, uint64_t{10} << 30);
  EXPECT_EQ(got->devices[1].memory, uint64_t{512} << 20);
  EXPECT_EQ(got->devices[2].share_id, "");
  EXPECT_EQ(got->devices[2].memory, 0u);
  a["consumedCapacity"] = {{"memory", "lots"}};
  EXPECT_THAT(OurAllocation(Claim({a}), "uid-1", "gpu.canhazgpu.dev", "node-a").status().message(),
              HasSubstr("not a byte count"));
}

TEST(ClaimAllocationTest, TolerationsFollowKubernetesRules) {
  auto tol = [](std::string key, std::string op, std::string value, std::string effect) {
    kube::DeviceToleration t;
    t.key = std::move(key);
    t.op = std::move(op);
    t.value = std::move(value);
    t.effect = std::move(effect);
    return t;
  };
  EXPECT_TRUE(Tolerates(tol("", "Exists", "", ""), "gpu.canhazgpu.dev/xid", "79", "NoSchedule"));
  EXPECT_TRUE(Tolerates(tol("gpu.canhazgpu.dev/xid", "Exists", "", "NoSchedule"),
                        "gpu.canhazgpu.dev/xid", "79", "NoSchedule"));
  EXPECT_TRUE(Tolerates(tol("gpu.canhazgpu.dev/xid", "Equal", "79", ""), "gpu.canhazgpu.dev/xid",
                        "79", "NoExecute"));
  EXPECT_FALSE(Tolerates(tol("gpu.canhazgpu.dev/xid", "Equal", "48", ""), "gpu.canhazgpu.dev/xid",
                         "79", "NoSchedule"));
  EXPECT_FALSE(Tolerates(tol("gpu.canhazgpu.dev/xid", "Exists", "", "NoSchedule"),
                         "gpu.canhazgpu.dev/xid", "79", "NoExecute"));
  EXPECT_FALSE(Tolerates(tol("", "Equal", "", ""), "k", "v", "NoSchedule"));
}

}  // namespace
}  // namespace canhazgpu::driver
