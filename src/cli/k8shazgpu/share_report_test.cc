#include "cli/k8shazgpu/share_report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

json Slice(const std::string& pool, const std::string& isolation) {
  json device = {{"name", "gpu-0"}};
  if (!isolation.empty()) device["attributes"] = {{"memoryIsolation", {{"string", isolation}}}};
  json slice;
  slice["spec"]["driver"] = "gpu.canhazgpu.dev";
  slice["spec"]["pool"]["name"] = pool;
  slice["spec"]["devices"] = json::array();
  slice["spec"]["devices"].push_back(device);
  return slice;
}

json Claim(const std::string& pool, const std::string& share_id, const std::string& memory) {
  json result = {
      {"request", "gpus"}, {"driver", "gpu.canhazgpu.dev"}, {"pool", pool}, {"device", "gpu-0"}};
  if (!share_id.empty()) {
    result["shareID"] = share_id;
    result["consumedCapacity"] = {{"memory", memory}};
  }
  json claim;
  claim["status"]["allocation"]["devices"]["results"] = json::array();
  claim["status"]["allocation"]["devices"]["results"].push_back(result);
  return claim;
}

TEST(ShareReportTest, SaysTheShareAndTheIsolationTheNodePublishes) {
  const std::string id = "7c1f2a8e-0d6b-4c4e-9a51-3f2b8d1e6a90";
  EXPECT_THAT(ShareLines({Claim("node-1", id, "10Gi")}, {Slice("node-1", "mps")}),
              ElementsAre("a 10Gi share of gpu-0 on node-1 (memory isolation: mps)"));
  // Canonical form: 10240Mi is 10Gi.
  EXPECT_THAT(ShareLines({Claim("node-1", id, "10240Mi")}, {Slice("node-1", "none")}),
              ElementsAre("a 10Gi share of gpu-0 on node-1 (memory isolation: none - the share "
                          "is booked, not enforced)"));
  // A driver that publishes no isolation (NVIDIA's shares mode) is named.
  EXPECT_THAT(ShareLines({Claim("node-1", id, "10Gi")}, {Slice("node-1", "")}),
              ElementsAre("a 10Gi share of gpu-0 on node-1 (memory isolation: not published "
                          "by gpu.canhazgpu.dev)"));
}

TEST(ShareReportTest, AGpuTheNodeDoesNotShareIsHeldWhole) {
  EXPECT_THAT(ShareLines({Claim("node-0", "", "")}, {Slice("node-0", "")}),
              ElementsAre("gpu-0 on node-0 is not shared by memory on its node: this run "
                          "holds it whole"));
  EXPECT_TRUE(ShareLines({json::object()}, {}).empty());  // not allocated: nothing to say
}

// What the API server sent is read, never trusted: odd shapes say nothing
// (or what can be said) instead of throwing.
TEST(ShareReportTest, MalformedObjectsAreReadWithoutThrowing) {
  json odd_results = Claim("node-1", "x", "10Gi");
  odd_results["status"]["allocation"]["devices"]["results"].push_back(7);
  odd_results["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = 3;
  json odd_slice = Slice("node-1", "mps");
  odd_slice["spec"]["devices"][0]["attributes"]["memoryIsolation"] = "mps";
  EXPECT_THAT(ShareLines({json(5), json{{"status", 3}}, odd_results}, {json("x"), odd_slice}),
              ElementsAre("a share of gpu-0 on node-1 (memory isolation: not published by "
                          "gpu.canhazgpu.dev)"));
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
