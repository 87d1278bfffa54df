// k8shazgpu-node end to end: the real binary against the simulated API
// server (k8shazgpu-sim apiserver) on a simulated host, driven by our
// kubelet client over its real unix sockets, beside the real canhazgpu.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/kubelet_client.h"
#include "driver/cdi_spec.h"
#include "driver/node_status.h"
#include "driver/testing/allocated_claim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kubesim/patch.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class NodeDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/node_daemon_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_ = {{"CANHAZGPU_STATE", dir_ + "/state.db"}, {"HOME", dir_}};
    sim_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--kubeconfig-out", Kubeconfig()},
                           {}, Kubeconfig(), dir_ + "/sim.log");
    ASSERT_TRUE(fs::exists(Kubeconfig())) << ReadFile(dir_ + "/sim.log");
    CliResult admin = RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--gpus", "4",
                                  "--fake-host", dir_ + "/host.json"},
                                 env_);
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
    kube::LoadOptions load;
    load.kubeconfig_flag = Kubeconfig();
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
    // The NodeGpuStatus CRD, as deploy/ installs it.
    std::ifstream crd(std::string(DEPLOY_DIR) + "/crds/nodegpustatuses.yaml");
    std::stringstream text;
    text << crd.rdbuf();
    ASSERT_TRUE(
        client_
            ->CreateObject({"apiextensions.k8s.io", "v1", "customresourcedefinitions", false}, "",
                           kubesim::YamlToJson(text.str()).value())
            .ok());
    StartNode();
  }
  void TearDown() override {
    if (node_ > 0) {
      kill(node_, SIGTERM);
      EXPECT_EQ(ExitCodeOf(node_), 0) << ReadFile(dir_ + "/node.log");
    }
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    fs::remove_all(dir_);
  }

  std::string Kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string RegistrationSocket() const { return dir_ + "/registry/gpu.canhazgpu.dev-reg.sock"; }
  void StartNode() {
    node_ = SpawnProgram({K8SHAZGPU_NODE_BINARY, "--node-name", "node-a", "--kubeconfig",
                          Kubeconfig(), "--plugin-dir", dir_ + "/plugin", "--cdi-dir",
                          dir_ + "/cdi", "--http-listen", "127.0.0.1:0"},
                         {// Every other setting from the environment, as the DaemonSet sets them.
                          {"K8SHAZGPU_STATE", dir_ + "/state.db"},
                          {"K8SHAZGPU_PROVIDER", "fake"},
                          {"K8SHAZGPU_FAKE_HOST", dir_ + "/host.json"},
                          {"K8SHAZGPU_REGISTRAR_DIR", dir_ + "/registry"},
                          {"HOME", dir_}},
                         {.stderr_path = dir_ + "/node.log"});
    ASSERT_TRUE(Eventually([&] { return fs::exists(RegistrationSocket()) || ProcessGone(node_); }))
        << ReadFile(dir_ + "/node.log");
  }
  std::vector<std::string> Published() {
    std::vector<std::string> names;
    absl::StatusOr<json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=node-a"});
    if (!slices.ok()) return {"error: " + std::string(slices.status().message())};
    for (const json& s : (*slices)["items"]) {
      for (const json& d : s["spec"].value("devices", json::array())) names.push_back(d["name"]);
    }
    return names;
  }
  // The first Event about the object, or null.
  json EventAbout(const std::string& kind, const std::string& name) {
    absl::StatusOr<json> events = client_->ListAll(kube::kEvents, "", {});
    if (!events.ok()) return nullptr;
    for (const json& e : (*events)["items"]) {
      if (e["involvedObject"].value("kind", "") == kind &&
          e["involvedObject"].value("name", "") == name) {
        return e;
      }
    }
    return nullptr;
  }
  // A claim in `default` allocated `device` of node-a, as the scheduler leaves it.
  driver::ClaimRef AllocatedClaim(const std::string& name, const std::string& device) {
    return driver::testing::CreateAllocatedClaim(*client_, "default", name, {device}).value();
  }

  std::string dir_;
  std::map<std::string, std::string> env_;
  int sim_ = 0;
  int node_ = 0;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(NodeDaemonTest, RegistersPublishesAndFollowsLocalReservations) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  EXPECT_EQ((*kubelet)->plugin().name, "gpu.canhazgpu.dev");
  EXPECT_EQ((*kubelet)->service(), "v1.DRAPlugin");
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(dir_ + "/node.log").find("registered with the kubelet") != std::string::npos;
  }));

  ASSERT_TRUE(Eventually([&] { return Published().size() == 4; })) << ReadFile(dir_ + "/node.log");
  // A local reservation takes the GPU out of the cluster; its release brings it back.
  ASSERT_EQ(
      RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "1", "--duration", "1h"}, env_).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return Published() == std::vector<std::string>{"gpu-0", "gpu-2", "gpu-3"};
  })) << ReadFile(dir_ + "/node.log");
  // The node's status says who holds it.
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<json> status = client_->Get(driver::kNodeGpuStatuses, "", "node-a");
    return status.ok() && (*status)["status"]["devices"][1]["state"] == "Held" &&
           (*status)["status"]["summary"]["free"] == 3;
  })) << ReadFile(dir_ + "/sim.log");
  ASSERT_EQ(RunProgram({CANHAZGPU_BINARY, "release", "-G", "1"}, env_).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Published().size() == 4; }));
}

TEST_F(NodeDaemonTest, PrepareReservesWritesCdiAndSurvivesARestart) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("train", "gpu-2");
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> prepared =
      (*kubelet)->NodePrepareResources({claim});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ((*prepared)[claim.uid].error, "");
  EXPECT_THAT((*prepared)[claim.uid].devices[0].cdi_device_ids,
              ElementsAre("k8s.gpu.canhazgpu.dev/claim=" + claim.uid + "-gpu-2"));
  EXPECT_TRUE(fs::exists(dir_ + "/cdi/" + driver::CdiSpecFileName(claim.uid)));

  // canhazgpu on the node sees the claim and cannot take its GPU.
  CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, env_);
  EXPECT_THAT(status.out, HasSubstr("\"train\"")) << status.err;
  CliResult taken = RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "2", "--nonblock"}, env_);
  EXPECT_NE(taken.exit_code, 0);

  // A local hold on another GPU makes a second claim's prepare fail, saying who.
  ASSERT_EQ(
      RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "3", "--duration", "1h"}, env_).exit_code, 0);
  const driver::ClaimRef blocked = AllocatedClaim("blocked", "gpu-3");
  EXPECT_THAT((*(*kubelet)->NodePrepareResources({blocked}))[blocked.uid].error,
              HasSubstr("is held there"));
  // The owner also reads it on the claim.
  json refused;
  EXPECT_TRUE(Eventually([&] {
    refused = EventAbout("ResourceClaim", "blocked");
    return !refused.is_null();
  })) << ReadFile(dir_ + "/node.log");
  EXPECT_EQ(refused["type"], "Warning");
  EXPECT_EQ(refused["reason"], "PrepareRefused");
  EXPECT_EQ(refused["involvedObject"]["uid"], blocked.uid);
  EXPECT_THAT(refused["message"].get<std::string>(), HasSubstr("is held there"));

  // Restarted (SIGKILL: no clean shutdown), the daemon still knows the claim.
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  fs::remove_all(dir_ + "/cdi");  // as after a node's /var/run is cleared
  StartNode();
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> again =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(fs::exists(dir_ + "/cdi/" + driver::CdiSpecFileName(claim.uid)));
  EXPECT_EQ((*(*again)->NodePrepareResources({claim}))[claim.uid].devices.size(), 1u);
  EXPECT_EQ((*(*again)->NodeUnprepareResources({claim}))[claim.uid], "");
  EXPECT_FALSE(fs::exists(dir_ + "/cdi/" + driver::CdiSpecFileName(claim.uid)));
  CliResult freed = RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "2", "--nonblock"}, env_);
  EXPECT_EQ(freed.exit_code, 0) << freed.err << ReadFile(dir_ + "/node.log");
}

TEST_F(NodeDaemonTest, ACorruptCheckpointIsMovedAsideWithAnEventOnTheNode) {
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  { std::ofstream(dir_ + "/plugin/checkpoint.json") << "{\"kind\": torn"; }
  StartNode();
  json corrupted;
  ASSERT_TRUE(Eventually([&] {
    corrupted = EventAbout("Node", "node-a");
    return !corrupted.is_null();
  })) << ReadFile(dir_ + "/node.log");
  EXPECT_EQ(corrupted["type"], "Warning");
  EXPECT_EQ(corrupted["reason"], "CheckpointCorrupted");
  EXPECT_THAT(corrupted["message"].get<std::string>(),
              HasSubstr("moved to " + dir_ + "/plugin/checkpoint.json.corrupt-"));
  EXPECT_THAT(ReadFile(dir_ + "/node.log"), HasSubstr("is unusable"));
  // It serves on, with nothing prepared.
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("after", "gpu-0");
  EXPECT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "");
}

TEST_F(NodeDaemonTest, StopsCleanlyRemovingItsSockets) {
  kill(node_, SIGTERM);
  EXPECT_EQ(ExitCodeOf(node_), 0) << ReadFile(dir_ + "/node.log");
  node_ = 0;
  EXPECT_FALSE(fs::exists(RegistrationSocket()));
  EXPECT_FALSE(fs::exists(dir_ + "/plugin/dra.sock"));
}

TEST(NodeDaemonFlagsTest, MissingNodeNameAndBadFlagsAreOneLineUsageErrors) {
  CliResult none = RunProgram({K8SHAZGPU_NODE_BINARY}, {});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--node-name (or K8SHAZGPU_NODE_NAME) is required"));
  CliResult bad =
      RunProgram({K8SHAZGPU_NODE_BINARY, "--node-name", "n", "--log-format", "xml"}, {});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--log-format: expected text or json"));
}

}  // namespace
}  // namespace canhazgpu::testing
