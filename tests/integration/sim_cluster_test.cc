// k8shazgpu-sim cluster end to end: the real binary with the real
// k8shazgpu-node on every node, read through our client and the real
// canhazgpu on a node.
#include <signal.h>

#include <filesystem>
#include <regex>

#include "daemon/kubelet_client.h"
#include "driver/cdi_spec.h"
#include "driver/testing/allocated_claim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/deploy_manifests.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SimClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sim_cluster_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cluster_dir_ = dir_ + "/cluster";
    sim_ = SpawnUntilReady(
        {K8SHAZGPU_SIM_BINARY, "cluster", "--dir", cluster_dir_, "--nodes", "2", "--gpus-per-node",
         "2", "--mig-gpus", "1", "--node-binary", K8SHAZGPU_NODE_BINARY},
        {}, cluster_dir_ + "/ready", Log());
    ASSERT_TRUE(fs::exists(cluster_dir_ + "/ready")) << ReadFile(Log());
    kube::LoadOptions load;
    load.kubeconfig_flag = cluster_dir_ + "/kubeconfig";
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
  }
  void TearDown() override {
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    fs::remove_all(dir_);
  }

  std::string Log() const { return dir_ + "/sim.log"; }
  std::string NodeDir(const std::string& node) const { return cluster_dir_ + "/nodes/" + node; }
  std::map<std::string, std::string> NodeEnv(const std::string& node) const {
    return {{"CANHAZGPU_STATE", NodeDir(node) + "/state.db"}, {"HOME", dir_}};
  }
  // The device names node `node` publishes now.
  std::vector<std::string> Published(const std::string& node) {
    std::vector<std::string> names;
    absl::StatusOr<json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=" + node});
    if (!slices.ok()) return {"error: " + std::string(slices.status().message())};
    for (const json& s : (*slices)["items"]) {
      for (const json& d : s["spec"].value("devices", json::array())) names.push_back(d["name"]);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // The pid of the node's daemon as the simulator last started it.
  int DaemonPid(const std::string& node) {
    const std::string log = ReadFile(Log());
    std::regex started(node + ": started .*k8shazgpu-node \\(pid ([0-9]+)\\)");
    int pid = 0;
    for (std::sregex_iterator it(log.begin(), log.end(), started), end; it != end; ++it) {
      pid = std::stoi((*it)[1]);
    }
    return pid;
  }

  std::string dir_;
  std::string cluster_dir_;
  int sim_ = 0;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(SimClusterTest, EveryNodePublishesValidSlicesBesideDeploysClasses) {
  for (const std::string node : {"node-0", "node-1"}) {
    // Two GPUs, the first in MIG mode with seven instances: nine devices.
    std::vector<std::string> devices = Published(node);
    EXPECT_EQ(devices.size(), 9u) << ::testing::PrintToString(devices);
    EXPECT_THAT(devices, ::testing::Contains("gpu-1"));
  }
  absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
  ASSERT_TRUE(slices.ok());
  for (json slice : (*slices)["items"]) {
    slice["apiVersion"] = "resource.k8s.io/v1";
    slice["kind"] = "ResourceSlice";
    EXPECT_THAT(StrictValidationErrors(slice), ::testing::IsEmpty()) << slice.dump();
  }
  // Unique across the cluster, as on real machines.
  std::set<std::string> uuids;
  for (const json& slice : (*slices)["items"]) {
    // (The slice of shared counters has no devices.)
    for (const json& d : slice["spec"].value("devices", json::array())) {
      EXPECT_TRUE(uuids.insert(d["attributes"]["uuid"]["string"]).second) << d.dump();
    }
  }
  for (const std::string klass : {"gpu.canhazgpu.dev", "mig.canhazgpu.dev"}) {
    EXPECT_TRUE(client_->Get(kube::kDeviceClasses, "", klass).ok()) << klass;
  }
  const kube::ResourceRef statuses{"canhazgpu.dev", "v1alpha1", "nodegpustatuses", false};
  EXPECT_TRUE(Eventually([&] { return client_->Get(statuses, "", "node-1").ok(); }));
}

TEST_F(SimClusterTest, AMigDeviceIsPreparedWithItsCapabilityNodes) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet = daemon::KubeletClient::Register(
      NodeDir("node-0") + "/plugins_registry/gpu.canhazgpu.dev-reg.sock");
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  ASSERT_TRUE(client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", "ml"}}}}).ok());
  const driver::ClaimRef claim = driver::testing::CreateAllocatedClaim(
                                     *client_, "ml", "mig", {"gpu-0-mig-1g10gb-19-1"}, "node-0")
                                     .value();
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> out =
      (*kubelet)->NodePrepareResources({claim});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[claim.uid].error, "") << ReadFile(NodeDir("node-0") + "/node.log");
  // The second instance: GPU instance 2, compute instance 0 (minors 5 and 6).
  const json spec =
      json::parse(ReadFile(NodeDir("node-0") + "/cdi/" + driver::CdiSpecFileName(claim.uid)));
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            (json{{{"path", "/dev/nvidia0"}},
                  {{"path", "/dev/nvidia-caps/nvidia-cap5"}},
                  {{"path", "/dev/nvidia-caps/nvidia-cap6"}}}));
}

TEST_F(SimClusterTest, ALocalReservationOnANodeWithdrawsOnlyThatNodesGpu) {
  CliResult reserve =
      RunProgram({CANHAZGPU_BINARY, "reserve", "--gpu-ids", "1"}, NodeEnv("node-0"));
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  EXPECT_TRUE(Eventually([&] {
    std::vector<std::string> devices = Published("node-0");
    return std::find(devices.begin(), devices.end(), "gpu-1") == devices.end();
  })) << ::testing::PrintToString(Published("node-0"));
  EXPECT_THAT(Published("node-1"), ::testing::Contains("gpu-1"));
  CliResult release = RunProgram({CANHAZGPU_BINARY, "release"}, NodeEnv("node-0"));
  ASSERT_EQ(release.exit_code, 0) << release.err;
  EXPECT_TRUE(Eventually([&] {
    std::vector<std::string> devices = Published("node-0");
    return std::find(devices.begin(), devices.end(), "gpu-1") != devices.end();
  }));
}

TEST_F(SimClusterTest, ADaemonThatDiesIsStartedAgainAndRepublishes) {
  const int first = DaemonPid("node-1");
  ASSERT_GT(first, 0) << ReadFile(Log());
  ASSERT_TRUE(
      client_
          ->DeleteCollection(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=node-1"})
          .ok());
  kill(first, SIGKILL);
  EXPECT_TRUE(Eventually([&] { return DaemonPid("node-1") != first; })) << ReadFile(Log());
  EXPECT_THAT(ReadFile(Log()), HasSubstr("was killed by signal 9; restarting"));
  EXPECT_TRUE(Eventually([&] { return Published("node-1").size() == 9; }))
      << ReadFile(NodeDir("node-1") + "/node.log");
}

TEST_F(SimClusterTest, SigtermStopsEveryDaemonAndTheServer) {
  const int daemon = DaemonPid("node-0");
  ASSERT_GT(daemon, 0);
  kill(sim_, SIGTERM);
  EXPECT_EQ(ExitCodeOf(sim_), 0) << ReadFile(Log());
  sim_ = 0;
  EXPECT_TRUE(ProcessGone(daemon));
  EXPECT_FALSE(fs::exists(NodeDir("node-0") + "/plugins_registry/gpu.canhazgpu.dev-reg.sock"));
  EXPECT_FALSE(client_->Get(kube::kDeviceClasses, "", "gpu.canhazgpu.dev").ok());
}

TEST(SimClusterFlagsTest, BadFlagsAndAForeignDirectoryAreOneLineErrors) {
  char tmpl[] = "/tmp/sim_cluster_flags.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {K8SHAZGPU_SIM_BINARY, "cluster"});
    return RunProgram(args, {});
  };
  CliResult no_dir = run({});
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_EQ(no_dir.err, "k8shazgpu-sim: cluster: --dir DIR is required\n");
  CliResult too_many_mig = run({"--dir", dir + "/c", "--gpus-per-node", "2", "--mig-gpus", "3"});
  EXPECT_EQ(too_many_mig.exit_code, 2);
  EXPECT_EQ(too_many_mig.err, "k8shazgpu-sim: --mig-gpus 3 is more than --gpus-per-node 2\n");
  CliResult zero_nodes = run({"--dir", dir + "/c", "--nodes", "0"});
  EXPECT_EQ(zero_nodes.exit_code, 2);
  EXPECT_THAT(zero_nodes.err, HasSubstr("--nodes"));
  WriteFile(dir + "/mine.txt", "keep me\n");
  CliResult foreign = run({"--dir", dir, "--node-binary", K8SHAZGPU_NODE_BINARY});
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_THAT(foreign.err, HasSubstr("is not empty and holds no earlier simulated cluster"));
  EXPECT_EQ(std::count(foreign.err.begin(), foreign.err.end(), '\n'), 1) << foreign.err;
  EXPECT_EQ(ReadFile(dir + "/mine.txt"), "keep me\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::testing
