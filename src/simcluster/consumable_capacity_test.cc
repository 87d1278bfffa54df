// Shares of one GPU by memory (KEP-5075 consumable capacity) end to end:
// the driver's slice with a shareable GPU, claims asking for capacity, the
// scheduler stand-in allocating shares, all over real HTTP against the
// simulated API server (which validates every object written).
#include <string>

#include "dra/capacity.h"
#include "dra/devices.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simcluster/testing/control_plane_fixture.h"

namespace canhazgpu::simcluster {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class SharedGpuPlaneTest : public testing::ControlPlaneFixture {
 protected:
  void SetUp() override {
    ControlPlaneFixture::SetUp();
    json cls = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "DeviceClass"},
                {"metadata", {{"name", "gpu.canhazgpu.dev"}}},
                {"spec",
                 {{"selectors",
                   {{{"cel",
                      {{"expression",
                        "device.driver == 'gpu.canhazgpu.dev' && "
                        "device.attributes['gpu.canhazgpu.dev'].type == 'gpu'"}}}}}}}}};
    ASSERT_TRUE(client_->CreateObject(kube::kDeviceClasses, "", cls).ok());
    AddNode("node-0");
    // One 40Gi GPU published for sharing: 40448Mi after the 512Mi margin.
    json slice = dra::ResourceSliceJson(
        dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-0", {.sharing = true}));
    auto created = client_->CreateObject(kube::kResourceSlices, "", slice);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // A claim for a share of `memory` ("" asks for no capacity) and a pod
  // that uses it.
  void AddSharePod(const std::string& name, const std::string& memory) {
    json exactly = {{"deviceClassName", "gpu.canhazgpu.dev"}};
    if (!memory.empty()) exactly["capacity"] = {{"requests", {{"memory", memory}}}};
    json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"metadata", {{"name", name}, {"namespace", "default"}}},
        {"spec", {{"devices", {{"requests", {{{"name", "gpu"}, {"exactly", exactly}}}}}}}}};
    auto made = client_->CreateObject(kube::kResourceClaims, "default", claim);
    ASSERT_TRUE(made.ok()) << made.status();
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "pod-" + name}, {"namespace", "default"}}},
                {"spec",
                 {{"containers", {{{"name", "main"}, {"image", "busybox"}}}},
                  {"resourceClaims", {{{"name", "gpu"}, {"resourceClaimName", name}}}}}}};
    auto created = client_->CreateObject(kube::kPods, "default", pod);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  json WaitShareAllocated(const std::string& claim) {
    return WaitFor(kube::kResourceClaims, claim, [](const json& c) {
      return !c.value("/status/allocation/devices/results"_json_pointer, json::array()).empty();
    });
  }

  std::string WaitPending(const std::string& pod) {
    json p = WaitFor(kube::kPods, pod, [](const json& p) {
      for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
        if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") return true;
      return false;
    });
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array()))
      if (c.value("type", "") == "PodScheduled") return c.value("message", "");
    return "";
  }
};

TEST_F(SharedGpuPlaneTest, TwoSharesOnOneGpuThenTooMuchAndWholeGpuWait) {
  StartPlane();
  AddSharePod("alice", "10Gi");
  AddSharePod("bob", "10Gi");
  const json a = WaitShareAllocated("alice")["status"]["allocation"]["devices"]["results"][0];
  const json b = WaitShareAllocated("bob")["status"]["allocation"]["devices"]["results"][0];
  EXPECT_EQ(a["device"], "gpu-0");
  EXPECT_EQ(b["device"], "gpu-0");
  ASSERT_TRUE(a.contains("shareID")) << a.dump();
  EXPECT_TRUE(dra::IsShareId(a["shareID"].get<std::string>())) << a.dump();
  EXPECT_NE(a["shareID"], b["shareID"]);
  EXPECT_EQ(a["consumedCapacity"], json({{"memory", "10Gi"}}));
  EXPECT_FALSE(WaitFor(kube::kPods, "pod-bob",
                       [](const json& p) {
                         return !p.value("/spec/nodeName"_json_pointer, std::string()).empty();
                       })["spec"]["nodeName"]
                   .is_null());

  // 40448Mi - 20Gi = 19968Mi left: 20Gi does not fit, and says why.
  AddSharePod("carol", "20Gi");
  const std::string message = WaitPending("pod-carol");
  EXPECT_THAT(message, HasSubstr("gpu-0 has 19968Mi of 40448Mi left (default/alice (pod "
                                 "pod-alice) 10Gi, default/bob (pod pod-bob) 10Gi); the "
                                 "request needs 20Gi"));
  EXPECT_FALSE(Get(kube::kResourceClaims, "carol")["status"].contains("allocation"));

  // No capacity asked: the default is the whole GPU, which waits for the shares.
  AddSharePod("whole", "");
  EXPECT_THAT(WaitPending("pod-whole"), HasSubstr("the request needs 40448Mi"));
}

}  // namespace
}  // namespace canhazgpu::simcluster
