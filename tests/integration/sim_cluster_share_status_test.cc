// What the node says on prepared claims (status.devices) and in its
// NodeGpuStatus about GPUs shared by memory, on the simulated cluster: the
// entries with their shareIDs, as the API server stores them, as the real
// kubectl shows them, and valid by the official schema.
#include <filesystem>
#include <iostream>
#include <map>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/sim_cluster_share_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class SimClusterShareStatusTest : public SimClusterShareTest {
 protected:
  // The name of the pod's (one) generated claim; "" before it has one.
  std::string ClaimOf(const std::string& pod) {
    const json p = Pod(pod);
    const json::json_pointer at("/status/resourceClaimStatuses/0/resourceClaimName");
    return p.contains(at) && p.at(at).is_string() ? p.at(at).get<std::string>() : "";
  }
  json Claim(const std::string& name) {
    return client_->Get(kube::kResourceClaims, "default", name).value_or(json::object());
  }
  // The claim's status.devices; [] while it has none.
  json DeviceStatuses(const std::string& claim) {
    const json c = Claim(claim);
    const json::json_pointer at("/status/devices");
    return c.contains(at) ? c.at(at) : json::array();
  }
  // The official resource.k8s.io/v1 document, "" where it is not on this machine.
  static std::string OpenApiDocument() {
    for (const std::string& root :
         {std::string(TESTS_DIR) + "/../../shared/schemas", std::string("/work/shared/schemas")}) {
      const std::string path = root + "/kubernetes/apis__resource.k8s.io__v1_openapi.json";
      if (std::filesystem::exists(path)) return path;
    }
    return "";
  }
  // The strict schema validator's verdict on `object` as a ResourceClaim.
  std::string ClaimSchemaErrors(const json& object) {
    const std::string file = dir_ + "/claim.json";
    WriteFile(file, object.dump(2));
    CliResult r =
        RunProgram({"python3", std::string(TESTS_DIR) + "/schema/validate_resource_slice.py",
                    OpenApiDocument(), file, "io.k8s.api.resource.v1.ResourceClaim"},
                   {});
    return r.exit_code == 0 ? "" : r.out + r.err;
  }
};

TEST_F(SimClusterShareStatusTest, EachPodsClaimSaysItsShareInStatusDevices) {
  CreateSharePod("a", "10Gi", EnvScript("a"));
  CreateSharePod("b", "20Gi", EnvScript("b"));
  ASSERT_TRUE(Eventually([&] {
    return Logs("a").starts_with("MEM=") && Logs("b").starts_with("MEM=");
  })) << ReadFile(NodeDir("node-0") + "/node.log");
  std::map<std::string, std::string> claims;  // pod -> its claim
  for (const char* pod : {"a", "b"}) {
    claims[pod] = ClaimOf(pod);
    ASSERT_NE(claims[pod], "") << Pod(pod).dump();
    // Written by the node's own thread shortly after the prepare.
    ASSERT_TRUE(Eventually([&] { return DeviceStatuses(claims[pod]).size() == 1; }))
        << Claim(claims[pod]).dump(2) << ReadFile(NodeDir("node-0") + "/node.log");
  }
  json a = DeviceStatuses(claims["a"])[0];
  json b = DeviceStatuses(claims["b"])[0];
  for (const auto& [pod, memory] : {std::pair{"a", "10Gi"}, std::pair{"b", "20Gi"}}) {
    json entry = DeviceStatuses(claims[pod])[0];
    EXPECT_EQ(entry["driver"], "gpu.canhazgpu.dev") << pod;
    EXPECT_EQ(entry["pool"], "node-0") << pod;
    EXPECT_EQ(entry["device"], "gpu-0") << pod;
    EXPECT_EQ(entry["shareID"], ShareIdOf(pod)) << pod;
    EXPECT_EQ(entry["data"]["memory"], memory) << pod;
    EXPECT_EQ(entry["data"]["memoryIsolation"], "none") << pod;  // no MPS on this node
    ASSERT_EQ(entry["conditions"].size(), 1u) << entry.dump();
    EXPECT_EQ(entry["conditions"][0]["type"], "Ready");
    EXPECT_EQ(entry["conditions"][0]["status"], "True");
    EXPECT_EQ(entry["conditions"][0]["reason"], "Prepared");
    EXPECT_FALSE(entry["conditions"][0].value("lastTransitionTime", "").empty());
  }
  EXPECT_NE(a["shareID"], b["shareID"]);

  // The claim as the server stored it is a valid ResourceClaim by the
  // official schema, strictly.
  if (OpenApiDocument().empty()) {
    std::cerr << "[ SKIPPED  ] the schema check: shared/schemas is not on this machine\n";
  } else if (RunProgram({"python3", "-c", "import jsonschema"}, {}).exit_code != 0) {
    std::cerr << "[ SKIPPED  ] the schema check: python3 jsonschema is missing\n";
  } else {
    EXPECT_EQ(ClaimSchemaErrors(Claim(claims["a"])), "");
  }

  // The real kubectl reads them back.
  if (std::string why = NoRecentKubectl("the kubectl part of this test does not run");
      !why.empty()) {
    std::cerr << "[ SKIPPED  ] " << why << "\n";
  } else {
    const std::map<std::string, std::string> env = {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}};
    for (const char* pod : {"a", "b"}) {
      CliResult got =
          RunProgram({"kubectl", "get", "resourceclaim", claims[pod], "-o", "json"}, env);
      ASSERT_EQ(got.exit_code, 0) << got.err;
      const json shown = json::parse(got.out, nullptr, false);
      ASSERT_TRUE(shown.is_object()) << got.out;
      EXPECT_EQ(shown["status"]["devices"][0]["shareID"], ShareIdOf(pod)) << got.out;
    }
  }

  // Done: the claims are unprepared and deallocated; no entry stays.
  WriteFile(Gate("a"), "");
  WriteFile(Gate("b"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("a") == "Succeeded" && Phase("b") == "Succeeded"; }));
  EXPECT_TRUE(Eventually([&] {
    return DeviceStatuses(claims["a"]).empty() && DeviceStatuses(claims["b"]).empty();
  })) << Claim(claims["a"]).dump(2);
}

// The node's NodeGpuStatus speaks in shares: the GPU is Shared (counted
// once), each pod's share under its claim, the local user's under
// localShares, and what is left.
TEST_F(SimClusterShareStatusTest, TheNodeGpuStatusListsPodAndLocalShares) {
  CliResult reserve =
      RunProgram({CANHAZGPU_BINARY, "reserve", "--gpu-mem", "20Gi"}, NodeEnv("node-0"));
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  CreateSharePod("a", "10Gi", EnvScript("a"));
  ASSERT_TRUE(Eventually([&] { return Logs("a").starts_with("MEM="); }))
      << ReadFile(NodeDir("node-0") + "/node.log");
  const kube::ResourceRef statuses{"canhazgpu.dev", "v1alpha1", "nodegpustatuses", false};
  json gpu;
  ASSERT_TRUE(Eventually([&] {
    const json ngs = client_->Get(statuses, "", "node-0").value_or(json::object());
    const json::json_pointer at("/status/devices/0");
    if (!ngs.contains(at)) return false;
    gpu = ngs.at(at);
    return gpu.value("state", "") == "Shared" && gpu.value("claims", json::array()).size() == 1;
  })) << gpu.dump(2);
  const json ngs = client_->Get(statuses, "", "node-0").value();
  EXPECT_EQ(ngs["status"]["summary"]["shared"], 1);
  EXPECT_EQ(ngs["status"]["summary"]["held"], 0);
  EXPECT_EQ(gpu["claims"][0]["shareID"], ShareIdOf("a"));
  EXPECT_EQ(gpu["claims"][0]["memory"], "10Gi");
  EXPECT_EQ(gpu["sharing"]["shareableMemory"], "81047Mi");
  EXPECT_EQ(gpu["sharing"]["freeMemory"], "50327Mi");  // 81047Mi less 30Gi
  ASSERT_EQ(gpu["sharing"]["localShares"].size(), 1u) << gpu.dump(2);
  EXPECT_EQ(gpu["sharing"]["localShares"][0]["memory"], "20Gi");
  EXPECT_EQ(gpu["sharing"]["localShares"][0]["kind"], "Manual");
  EXPECT_FALSE(gpu["sharing"]["localShares"][0].value("user", "").empty());
  // The cluster CLI still reads it: the pod's share and what is left.
  CliResult status = RunProgram({K8SHAZGPU_BINARY, "status"},
                                {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}, {"HOME", dir_}});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("10Gi")) << status.out;
  WriteFile(Gate("a"), "");
}

}  // namespace
}  // namespace canhazgpu::testing
