// k8shazgpu-node end to end: the real binary against the simulated API
// server (k8shazgpu-sim apiserver) on a simulated host, driven by our
// kubelet client over its real unix sockets, beside the real canhazgpu.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "daemon/kubelet_client.h"
#include "driver/cdi_spec.h"
#include "driver/checkpoint.h"
#include "driver/node_status.h"
#include "driver/testing/allocated_claim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/slow_clients.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kubesim/patch.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
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
  // `env` adds to or replaces the environment below.
  void StartNode(std::map<std::string, std::string> env = {}) {
    // Every other setting from the environment, as the DaemonSet sets them.
    env.insert({{"K8SHAZGPU_STATE", dir_ + "/state.db"},
                {"K8SHAZGPU_PROVIDER", "fake"},
                {"K8SHAZGPU_FAKE_HOST", dir_ + "/host.json"},
                {"K8SHAZGPU_REGISTRAR_DIR", dir_ + "/registry"},
                {"HOME", dir_}});
    fs::remove(RegistrationSocket());  // a killed daemon's: wait for the new one's
    node_ = SpawnProgram({K8SHAZGPU_NODE_BINARY, "--node-name", "node-a", "--kubeconfig",
                          Kubeconfig(), "--plugin-dir", dir_ + "/plugin", "--cdi-dir",
                          dir_ + "/cdi", "--http-listen", "127.0.0.1:0"},
                         env, {.stderr_path = dir_ + "/node.log"});
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
  // The published device `name` of node-a, or null.
  json PublishedDevice(const std::string& name) {
    absl::StatusOr<json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=node-a"});
    if (!slices.ok()) return nullptr;
    for (const json& s : (*slices)["items"]) {
      for (const json& d : s["spec"].value("devices", json::array())) {
        if (d["name"] == name) return d;
      }
    }
    return nullptr;
  }
  // The simulated host's GPU `index` changed by `change`, written as a
  // whole (rename) so that no reader sees half a file.
  void ChangeHostGpu(int index, const std::function<void(json&)>& change) {
    json host = json::parse(ReadFile(dir_ + "/host.json"));
    change(host["gpus"][index]);
    { std::ofstream(dir_ + "/host.json.new") << host.dump(2); }
    fs::rename(dir_ + "/host.json.new", dir_ + "/host.json");
  }
  // The CDI spec files in --cdi-dir.
  std::vector<std::string> CdiFiles() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ + "/cdi", ec)) {
      names.push_back(e.path().filename());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // The checkpoint's claims: uid -> state.
  std::map<std::string, std::string> CheckpointStates() {
    std::map<std::string, std::string> states;
    const std::string text = ReadFile(dir_ + "/plugin/checkpoint.json");
    if (text.empty()) return states;
    const json document = json::parse(text);
    for (const auto& [uid, claim] : document["claims"].items()) states[uid] = claim["state"];
    return states;
  }
  // GPUs that canhazgpu on the node sees taken (by anyone, claims included).
  std::vector<int> TakenGpus() {
    CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, env_);
    std::vector<int> taken;
    for (const json& gpu : json::parse(status.out)) {
      if (gpu["status"] != "AVAILABLE") taken.push_back(gpu["gpu_id"]);
    }
    return taken;
  }
  // Stops the simulated API server and starts an empty one on the same port.
  void RestartApiServerEmpty() {
    const std::string config = ReadFile(Kubeconfig());
    const std::string marker = "127.0.0.1:";
    const size_t at = config.find(marker);
    ASSERT_NE(at, std::string::npos) << config;
    const std::string port = config.substr(
        at + marker.size(),
        config.find_first_not_of("0123456789", at + marker.size()) - at - marker.size());
    kill(sim_, SIGKILL);
    ExitCodeOf(sim_);
    fs::remove(Kubeconfig());
    sim_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--listen", "127.0.0.1:" + port,
                            "--kubeconfig-out", Kubeconfig()},
                           {}, Kubeconfig(), dir_ + "/sim2.log");
    ASSERT_TRUE(fs::exists(Kubeconfig())) << ReadFile(dir_ + "/sim2.log");
  }
  // The port the daemon serves /healthz, /readyz and /metrics on, from its
  // log; 0 until it says.
  int HttpPort() const {
    const std::string log = ReadFile(dir_ + "/node.log");
    const std::string marker = "health and metrics on 127.0.0.1:";
    const size_t at = log.find(marker);
    return at == std::string::npos ? 0 : std::atoi(log.c_str() + at + marker.size());
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
              ElementsAre("k8s.gpu.canhazgpu.dev/claim=" + claim.uid + "-gpu-2",
                          "k8s.gpu.canhazgpu.dev/claim=" + claim.uid + "-request-gpu"));
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

TEST_F(NodeDaemonTest, AHealthEventTaintsTheDeviceUntilTheGpuRecovers) {
  // The GPUs through the test libnvidia-ml.so, over the same simulated host.
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  StartNode({{"K8SHAZGPU_PROVIDER", "nvidia"},
             {"K8SHAZGPU_NVML_LIBRARY", FAKE_NVML_LIBRARY},
             {"FAKE_NVML_HOST", dir_ + "/host.json"}});
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  ASSERT_TRUE(Eventually([&] { return Published().size() == 4; })) << ReadFile(dir_ + "/node.log");
  EXPECT_FALSE(PublishedDevice("gpu-1").contains("taints"));

  ChangeHostGpu(1, [](json& gpu) { gpu["retired_pages_pending"] = true; });
  json tainted;
  ASSERT_TRUE(Eventually([&] {
    tainted = PublishedDevice("gpu-1");
    return tainted.contains("taints");
  })) << ReadFile(dir_ + "/node.log");
  ASSERT_EQ(tainted["taints"].size(), 1u);
  EXPECT_EQ(tainted["taints"][0]["key"], "gpu.canhazgpu.dev/ecc-retirement-pending");
  EXPECT_EQ(tainted["taints"][0]["effect"], "NoSchedule");
  EXPECT_FALSE(PublishedDevice("gpu-2").contains("taints"));
  // The message goes to the kubelet, for the pod's status.
  driver::DeviceHealth gpu1;
  ASSERT_TRUE((*kubelet)
                  ->WatchResources([&](const std::vector<driver::DeviceHealth>& devices) {
                    for (const driver::DeviceHealth& d : devices) {
                      if (d.device == "gpu-1") gpu1 = d;
                    }
                    return gpu1.state != driver::DeviceHealth::State::kUnhealthy;
                  })
                  .ok());
  EXPECT_THAT(gpu1.message, HasSubstr("ECC page retirement pending"));
  // A prepare on it is refused, saying why.
  const driver::ClaimRef claim = AllocatedClaim("on-bad-gpu", "gpu-1");
  EXPECT_THAT((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error,
              HasSubstr("is tainted gpu.canhazgpu.dev/ecc-retirement-pending:NoSchedule"));

  ChangeHostGpu(1, [](json& gpu) { gpu.erase("retired_pages_pending"); });
  EXPECT_TRUE(Eventually([&] {
    const json d = PublishedDevice("gpu-1");
    return !d.is_null() && !d.contains("taints");
  })) << ReadFile(dir_ + "/node.log");
}

TEST_F(NodeDaemonTest, SlicesAreRepublishedWhenTheApiServerComesBackEmpty) {
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  StartNode({{"K8SHAZGPU_RESYNC", "1s"}});
  ASSERT_TRUE(Eventually([&] { return Published().size() == 4; })) << ReadFile(dir_ + "/node.log");

  // Down (its state lost, as an etcd restored from an old backup), and back.
  RestartApiServerEmpty();
  kube::LoadOptions load;
  load.kubeconfig_flag = Kubeconfig();
  client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                .value();
  EXPECT_TRUE(Eventually([&] { return Published().size() == 4; })) << ReadFile(dir_ + "/node.log");
  EXPECT_FALSE(ProcessGone(node_));
  // The claims' informer is back in step too: a new claim prepares.
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("after-outage", "gpu-2");
  EXPECT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "")
      << ReadFile(dir_ + "/node.log");
}

TEST_F(NodeDaemonTest, ConcurrentPreparesGiveEachGpuToExactlyOneClaim) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  // Eight claims, two for each GPU (a scheduler gone wrong), prepared at once.
  std::vector<driver::ClaimRef> claims;
  for (int i = 0; i < 8; ++i) {
    claims.push_back(AllocatedClaim("c" + std::to_string(i), "gpu-" + std::to_string(i % 4)));
  }
  std::vector<std::string> errors(claims.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < claims.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::map<std::string, driver::PrepareResult>> out =
          (*kubelet)->NodePrepareResources({claims[i]});
      errors[i] = out.ok() ? (*out)[claims[i].uid].error : "call failed";
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::string> winners;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const std::string& a = errors[gpu];
    const std::string& b = errors[gpu + 4];
    ASSERT_NE(a.empty(), b.empty()) << "gpu-" << gpu << ": '" << a << "' and '" << b << "'";
    EXPECT_THAT(a.empty() ? b : a, HasSubstr("is already prepared for claim default/c"));
    winners.push_back(claims[a.empty() ? gpu : gpu + 4].uid);
  }
  std::sort(winners.begin(), winners.end());

  // After a SIGKILL and a restart: the same four, whole.
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  StartNode();
  std::map<std::string, std::string> states = CheckpointStates();
  ASSERT_EQ(states.size(), 4u);
  for (const std::string& uid : winners) EXPECT_EQ(states[uid], "PrepareCompleted");
  std::vector<std::string> files;
  for (const std::string& uid : winners) files.push_back(driver::CdiSpecFileName(uid));
  std::sort(files.begin(), files.end());
  EXPECT_EQ(CdiFiles(), files);
  EXPECT_EQ(TakenGpus(), (std::vector<int>{0, 1, 2, 3}));
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> again =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(again.ok()) << again.status();
  for (size_t i = 0; i < claims.size(); ++i) {
    const std::string error = (*(*again)->NodePrepareResources({claims[i]}))[claims[i].uid].error;
    EXPECT_EQ(error.empty(), errors[i].empty()) << claims[i].name << ": " << error;
  }
}

TEST_F(NodeDaemonTest, ACrashBetweenTheCheckpointPhasesIsRolledBackAtRestart) {
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  StartNode({{"K8SHAZGPU_TEST_CRASH_BEFORE_PREPARE_COMPLETED", "1"}});
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("crashed", "gpu-1");
  // The daemon dies in the call: reserved, spec written, PrepareStarted only.
  EXPECT_FALSE((*kubelet)->NodePrepareResources({claim}).ok());
  EXPECT_EQ(ExitCodeOf(node_), 128 + SIGKILL);
  EXPECT_EQ(CheckpointStates(),
            (std::map<std::string, std::string>{{claim.uid, "PrepareStarted"}}));
  EXPECT_EQ(CdiFiles(), std::vector<std::string>{driver::CdiSpecFileName(claim.uid)});
  EXPECT_EQ(TakenGpus(), std::vector<int>{1});

  // Restarted: the half-done claim is undone — no record, no spec, no reservation.
  StartNode();
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> again =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(CheckpointStates().empty());
  EXPECT_TRUE(CdiFiles().empty());
  EXPECT_TRUE(TakenGpus().empty()) << ReadFile(dir_ + "/node.log");
  // The kubelet retries, and it is prepared cleanly.
  EXPECT_EQ((*(*again)->NodePrepareResources({claim}))[claim.uid].error, "");
  EXPECT_EQ(CheckpointStates(),
            (std::map<std::string, std::string>{{claim.uid, "PrepareCompleted"}}));
  EXPECT_EQ(CdiFiles(), std::vector<std::string>{driver::CdiSpecFileName(claim.uid)});
  EXPECT_EQ(TakenGpus(), std::vector<int>{1});
}

TEST_F(NodeDaemonTest, BadClaimsInARequestEachGetALineAndChangeNothing) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef good = AllocatedClaim("good", "gpu-0");
  const driver::ClaimRef other_pool =
      driver::testing::CreateAllocatedClaim(*client_, "default", "other-pool", {"gpu-1"}, "node-b")
          .value();
  const driver::ClaimRef unknown_device = AllocatedClaim("unknown-device", "gpu-9");
  driver::ClaimRef replaced = AllocatedClaim("replaced", "gpu-2");
  replaced.uid = "not-" + replaced.uid;  // the claim was deleted and made again
  json unallocated_object = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", "unallocated"}}},
      {"spec",
       {{"devices",
         {{"requests",
           {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}};
  json created =
      client_->CreateObject(kube::kResourceClaims, "default", unallocated_object).value();
  const driver::ClaimRef unallocated{
      .namespace_name = "default", .uid = created["metadata"]["uid"], .name = "unallocated"};
  // Allocated a device of another driver only.
  created = client_
                ->CreateObject(kube::kResourceClaims, "default",
                               [&] {
                                 json c = unallocated_object;
                                 c["metadata"]["name"] = "other-driver";
                                 return c;
                               }())
                .value();
  created["status"] = {{"allocation",
                        {{"devices",
                          {{"results",
                            {{{"request", "gpu"},
                              {"driver", "gpu.nvidia.com"},
                              {"pool", "node-a"},
                              {"device", "gpu-3"}}}}}}}}};
  created = client_->UpdateStatus(kube::kResourceClaims, "default", created).value();
  const driver::ClaimRef other_driver{
      .namespace_name = "default", .uid = created["metadata"]["uid"], .name = "other-driver"};
  const driver::ClaimRef missing{.namespace_name = "default", .uid = "uid-m", .name = "missing"};
  const driver::ClaimRef incomplete{.namespace_name = "", .uid = "uid-i", .name = "incomplete"};

  absl::StatusOr<std::map<std::string, driver::PrepareResult>> out =
      (*kubelet)->NodePrepareResources({good, other_pool, unknown_device, replaced, unallocated,
                                        other_driver, missing, incomplete});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[good.uid].error, "");
  const std::map<std::string, std::string> expected = {
      {other_pool.uid, "but this node is node-a"},
      {unknown_device.uid, "gpu-9 is not a device of node node-a"},
      {replaced.uid, "is now uid"},
      {unallocated.uid, "is not allocated yet"},
      {other_driver.uid, "has no device of driver gpu.canhazgpu.dev in its allocation"},
      {missing.uid, "cannot read claim default/missing"},
      {incomplete.uid, "missing namespace"},
  };
  for (const auto& [uid, words] : expected) {
    const std::string& error = (*out)[uid].error;
    EXPECT_THAT(error, HasSubstr(words)) << uid;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_TRUE((*out)[uid].devices.empty());
  }
  // Nothing but the good claim left a trace.
  EXPECT_EQ(CheckpointStates(),
            (std::map<std::string, std::string>{{good.uid, "PrepareCompleted"}}));
  EXPECT_EQ(CdiFiles(), std::vector<std::string>{driver::CdiSpecFileName(good.uid)});
  EXPECT_EQ(TakenGpus(), std::vector<int>{0});
}

// Issue 29: nine trickling connections held all eight of httplib's threads
// and /healthz took 10 s, past the kubelet's 2 s, so any pod that could
// reach the port could get the driver restarted in a loop. Now no client
// holds a thread, one client holds at most 8 connections, and the probes
// are answered beside a flood of them from another client.
TEST_F(NodeDaemonTest, Issue29TricklingClientsStarveNeitherTheProbesNorTheMetrics) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can run the slow clients as another user";
  int port = 0;
  ASSERT_TRUE(Eventually([&] { return (port = HttpPort()) > 0; })) << ReadFile(dir_ + "/node.log");
  ASSERT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").code == 200; }));
  SlowClients slow(kNobody, port, 40);  // more than 8 threads and 8 connections
  ASSERT_TRUE(slow.started());
  EXPECT_EQ(HttpGet(port, "/healthz").code, 200);
  EXPECT_EQ(HttpGet(port, "/readyz").code, 200);
  HttpGetReply metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(metrics.code, 200);
  EXPECT_THAT(metrics.body, HasSubstr("# TYPE "));
  // The flooder's own next connection is the one refused.
  EXPECT_EQ(slow.OneMore("/healthz"), "HTTP/1.1 503 Service Unavailable");
}

// Issue 29 item 5: with the API server stopped, a prepare held the
// preparer's lock for minutes (the pod's lookup, 6 tries of 30 s), the
// kubelet gave up at its deadline, and an unprepare waited behind it.
TEST_F(NodeDaemonTest, AStoppedApiServerHoldsNoCallPastItsDeadline) {
  daemon::KubeletClientOptions options;
  options.call_timeout = std::chrono::seconds(10);
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket(), options);
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef done = AllocatedClaim("done", "gpu-0");
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({done}))[done.uid].error, "");
  // Reserved for a pod: its prepare looks the pod's user up.
  const driver::ClaimRef with_pod =
      driver::testing::CreateAllocatedClaim(*client_, "default", "with-pod", {"gpu-1"}, "node-a",
                                            "with-pod-0")
          .value();
  const driver::ClaimRef unseen{.namespace_name = "default", .uid = "uid-u", .name = "unseen"};

  ASSERT_EQ(kill(sim_, SIGSTOP), 0);
  auto prepare = std::async(std::launch::async, [&] {
    return (*kubelet)->NodePrepareResources({with_pod, unseen});
  });
  absl::StatusOr<std::map<std::string, std::string>> unprepared =
      (*kubelet)->NodeUnprepareResources({done});
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> prepared = prepare.get();
  kill(sim_, SIGCONT);
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  EXPECT_EQ((*unprepared)[done.uid], "");
  // Answered before the kubelet's deadline: the claim whose read needed the
  // server says so (or that the deadline came before its turn, when the
  // first claim was not in the daemon's cache yet and its read took the
  // call's time); the other one (cached) is prepared or says the same.
  ASSERT_TRUE(prepared.ok()) << prepared.status() << ReadFile(dir_ + "/node.log");
  EXPECT_THAT(
      (*prepared)[unseen.uid].error,
      ::testing::AnyOf(
          HasSubstr("cannot read claim default/unseen: cannot get "
                    "resourceclaims.resource.k8s.io \"unseen\": the call's deadline passed"),
          HasSubstr("claim default/unseen: not prepared: the call's deadline passed before its "
                    "turn")));
  const std::string& error = (*prepared)[with_pod.uid].error;
  EXPECT_TRUE(error.empty() || error.find("deadline") != std::string::npos) << error;
}

// Issue 29 item 14: 2,000 unknown claims in one call. The caller gave up at
// 15 s; the daemon went on asking the API server for 7 minutes (2,100
// requests), and its slice updates waited behind them.
TEST_F(NodeDaemonTest, ThousandsOfUnknownClaimsAreAnsweredWithinTheCallsDeadline) {
  daemon::KubeletClientOptions options;
  options.call_timeout = std::chrono::seconds(3);
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket(), options);
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  std::vector<driver::ClaimRef> claims;
  for (int i = 0; i < 2000; ++i) {
    claims.push_back({.namespace_name = "default",
                      .uid = "uid-" + std::to_string(i),
                      .name = "unknown-" + std::to_string(i)});
  }
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> out =
      (*kubelet)->NodePrepareResources(claims);
  ASSERT_TRUE(out.ok()) << out.status() << ReadFile(dir_ + "/node.log");
  ASSERT_EQ(out->size(), claims.size());
  int not_found = 0;
  for (const driver::ClaimRef& claim : claims) {
    EXPECT_THAT((*out)[claim.uid].error, HasSubstr("claim default/" + claim.name + ": "));
    not_found += (*out)[claim.uid].error.find("not found") != std::string::npos ? 1 : 0;
  }
  // The daemon's client (--kube-api-burst 50, --kube-api-qps 20 by
  // default): at most 50 at once, then 20 a second for the call's 3 s, not
  // one request per claim.
  std::istringstream log(ReadFile(dir_ + "/sim.log"));
  int asked = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("/namespaces/default/resourceclaims/unknown-") != std::string::npos) ++asked;
  }
  EXPECT_GT(asked, 0);
  EXPECT_LE(asked, 50 + 20 * 4);

  // A request the deadline cut short was asked but not answered.
  EXPECT_GT(not_found, 0);
  EXPECT_LE(not_found, asked);

  // A PrepareRefused Event for each claim the API server said is not
  // found, none for those not reached or cut short: a claim refused
  // afterwards gets its Event after them (one queue), so by then they are
  // all in.
  const driver::ClaimRef last{.namespace_name = "default", .uid = "uid-l", .name = "last"};
  ASSERT_THAT((*(*kubelet)->NodePrepareResources({last}))[last.uid].error, HasSubstr("not found"));
  ASSERT_TRUE(Eventually([&] { return !EventAbout("ResourceClaim", "last").is_null(); }))
      << ReadFile(dir_ + "/node.log");
  int refused = 0;
  absl::StatusOr<json> events = client_->ListAll(kube::kEvents, "", {});
  ASSERT_TRUE(events.ok()) << events.status();
  for (const json& e : (*events)["items"]) {
    if (e["involvedObject"].value("name", "").starts_with("unknown-")) ++refused;
  }
  EXPECT_EQ(refused, not_found);
}

// Issue 30: every prepare asked the API server for its pod (the user
// label), so pods churning on a node queued behind the client's rate limit
// (a prepare's p50 was 198 ms). The pods bound to the node come from a
// watch: once it has the pod, a prepare asks for nothing.
TEST_F(NodeDaemonTest, APreparesPodComesFromTheNodesPodCache) {
  ASSERT_TRUE(
      client_
          ->CreateObject(
              kube::kPods, "default",
              {{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"metadata",
                {{"name", "cached-pod"}, {"labels", {{"canhazgpu.dev/user", "carol"}}}}},
               {"spec",
                {{"nodeName", "node-a"}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}})
          .ok());
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  auto pod_gets = [&] {
    int gets = 0;
    std::istringstream log(ReadFile(dir_ + "/sim.log"));
    for (std::string line; std::getline(log, line);) {
      if (line.find("GET /api/v1/namespaces/default/pods/cached-pod") != std::string::npos) ++gets;
    }
    return gets;
  };
  int round = 0;
  bool from_cache = false;
  while (!from_cache && round < 50) {
    const driver::ClaimRef claim =
        driver::testing::CreateAllocatedClaim(*client_, "default", "c" + std::to_string(round),
                                              {"gpu-1"}, "node-a", "cached-pod")
            .value();
    const int before = pod_gets();
    absl::StatusOr<std::map<std::string, driver::PrepareResult>> out =
        (*kubelet)->NodePrepareResources({claim});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[claim.uid].error, "");
    // The user is the pod's label, wherever it came from.
    CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, env_);
    EXPECT_THAT(status.out, HasSubstr("carol")) << status.err;
    from_cache = pod_gets() == before;
    ASSERT_TRUE((*kubelet)->NodeUnprepareResources({claim}).ok());
    ++round;
  }
  EXPECT_TRUE(from_cache) << "every prepare asked the API server for the pod";
}

// Issue 29 item 4: root's `admin --force` ended the K8S reservation of a
// prepared claim, nothing put it back (a re-prepare answers from the
// checkpoint), and a local user was then handed the pod's GPU.
TEST_F(NodeDaemonTest, AdminForceRefusesWhileAPodHoldsAGpuAndTheDaemonPutsItBack) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("train", "gpu-2");
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "");

  CliResult refused = RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--fake-host",
                                  dir_ + "/host.json", "--force"},
                                 env_);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("gpu 2 for claim default/train: prepared for Kubernetes"));
  EXPECT_THAT(refused.err, HasSubstr("add --drop-pod-reservations"));
  EXPECT_EQ(TakenGpus(), std::vector<int>{2});
  CliResult alone = RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--fake-host",
                                dir_ + "/host.json", "--drop-pod-reservations"},
                               env_);
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_THAT(alone.err, HasSubstr("--drop-pod-reservations needs --force"));

  CliResult dropped = RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--fake-host",
                                  dir_ + "/host.json", "--force", "--drop-pod-reservations"},
                                 env_);
  EXPECT_EQ(dropped.exit_code, 0) << dropped.err;
  EXPECT_THAT(dropped.out, HasSubstr("Released 1 reservation(s)"));
  // The daemon sees the commit and reserves the pod's GPU again.
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(dir_ + "/node.log").find("had lost its reservation of gpu 2; reserved again") !=
           std::string::npos;
  })) << ReadFile(dir_ + "/node.log");
  EXPECT_EQ(TakenGpus(), std::vector<int>{2});
  CliResult taken = RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "2", "--nonblock"}, env_);
  EXPECT_NE(taken.exit_code, 0);
  EXPECT_THAT(taken.err, HasSubstr("claim default/train")) << taken.err;
}

// Issue 29 item 4: a GPU of a prepared claim that a local user took while
// the store had lost the claim's reservation is not taken from them: the
// daemon says so, in its log and on the claim.
TEST_F(NodeDaemonTest, AGpuTakenWhileItsClaimsReservationWasLostIsReportedOnTheClaim) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("train", "gpu-1");
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "");
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  ASSERT_EQ(RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--fake-host",
                        dir_ + "/host.json", "--force", "--drop-pod-reservations"},
                       env_)
                .exit_code,
            0);
  ASSERT_EQ(
      RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "1", "--duration", "1h"}, env_).exit_code, 0);

  StartNode();
  json conflict;
  ASSERT_TRUE(Eventually([&] {
    conflict = EventAbout("ResourceClaim", "train");
    return !conflict.is_null();
  })) << ReadFile(dir_ + "/node.log");
  EXPECT_EQ(conflict["reason"], "ReservationConflict");
  EXPECT_EQ(conflict["type"], "Warning");
  EXPECT_THAT(conflict["message"].get<std::string>(),
              HasSubstr("claim default/train (" + claim.uid +
                        ") is prepared on this node, but its reservation cannot be put back: gpu "
                        "1: reserved by "));
  EXPECT_THAT(ReadFile(dir_ + "/node.log"), HasSubstr("its reservation cannot be put back"));
  // The local user keeps it; once they release it, it is the claim's again.
  ASSERT_EQ(RunProgram({CANHAZGPU_BINARY, "release", "-G", "1"}, env_).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return TakenGpus() == std::vector<int>{1}; }));
  CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, env_);
  EXPECT_THAT(status.out, HasSubstr("\"train\"")) << status.err;
}

// Issue 29 item 4: after the state file was deleted and `admin` made a new
// one, the daemon kept the old file open: its slices followed a file nobody
// else used, and the pods' GPUs were free in the new one.
TEST_F(NodeDaemonTest, AStateFileDeletedAndMadeAgainIsFollowedAndGetsThePodsGpusBack) {
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("train", "gpu-2");
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "");

  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dir_ + "/state.db" + suffix);
  ASSERT_EQ(RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--fake-host",
                        dir_ + "/host.json"},
                       env_)
                .exit_code,
            0);
  EXPECT_TRUE(Eventually([&] { return TakenGpus() == std::vector<int>{2}; }))
      << ReadFile(dir_ + "/node.log");
  const std::string log = ReadFile(dir_ + "/node.log");
  EXPECT_THAT(log, HasSubstr("state file " + dir_ + "/state.db was replaced"));
  EXPECT_THAT(log, HasSubstr("had lost its reservation of gpu 2; reserved again"));
  EXPECT_NE(RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "2", "--nonblock"}, env_).exit_code, 0);
  // The slices follow the new file.
  ASSERT_EQ(
      RunProgram({CANHAZGPU_BINARY, "reserve", "-G", "1", "--duration", "1h"}, env_).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return Published() == std::vector<std::string>{"gpu-0", "gpu-2", "gpu-3"};
  })) << ReadFile(dir_ + "/node.log");

  // Killed and started again: the new file, and nothing to put back.
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  StartNode();
  ASSERT_EQ(RunProgram({CANHAZGPU_BINARY, "release", "-G", "1"}, env_).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Published().size() == 4; }));
  EXPECT_EQ(TakenGpus(), std::vector<int>{2});
  EXPECT_THAT(ReadFile(dir_ + "/node.log"), Not(HasSubstr("reserved again")));
}

TEST_F(NodeDaemonTest, StopsCleanlyRemovingItsSockets) {
  kill(node_, SIGTERM);
  EXPECT_EQ(ExitCodeOf(node_), 0) << ReadFile(dir_ + "/node.log");
  node_ = 0;
  EXPECT_FALSE(fs::exists(RegistrationSocket()));
  EXPECT_FALSE(fs::exists(dir_ + "/plugin/dra.sock"));
}

// Issue 29 item 9: under umask 000 the plugin directory and dra.sock were
// made 0777, so a local user could unprepare a pod's claim and take its GPU.
TEST_F(NodeDaemonTest, WhatItCreatesHasItsModeWhateverTheUmask) {
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  for (const char* made : {"/plugin", "/registry", "/cdi"}) fs::remove_all(dir_ + made);
  const mode_t old_umask = umask(0);
  StartNode();
  umask(old_umask);
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet =
      daemon::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("train", "gpu-2");
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "");

  const std::map<std::string, mode_t> expected = {
      {dir_ + "/plugin", 0750},
      {dir_ + "/plugin/dra.sock", 0600},
      {dir_ + "/plugin/checkpoint.json", 0600},
      {dir_ + "/registry", 0750},
      {RegistrationSocket(), 0600},
      {dir_ + "/cdi", 0755},
      {dir_ + "/cdi/" + driver::CdiSpecFileName(claim.uid), 0644},
  };
  for (const auto& [path, mode] : expected) {
    struct stat info;
    ASSERT_EQ(lstat(path.c_str(), &info), 0) << path;
    EXPECT_EQ(info.st_mode & 07777, mode) << path;
  }
}

// Issue 29 item 15: a claim name is the kubelet's to choose, and one with a
// newline or an escape sequence went into the log raw, forging lines.
TEST_F(NodeDaemonTest, ControlCharactersInAClaimNameAreEscapedInTheLog) {
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  // A prepared claim whose device is gone: its restore is logged, with its name.
  std::string boot_id = ReadFile("/proc/sys/kernel/random/boot_id");
  boot_id.erase(boot_id.find_last_not_of("\n") + 1);
  const driver::CheckpointClaim evil{
      .uid = "uid-evil",
      .namespace_name = "default",
      .name = "evil\nk8shazgpu-node: registered with the kubelet\x1b[2K",
      .state = driver::PrepareState::kCompleted,
      .devices = {{.requests = {"gpu"}, .pool = "node-a", .device = "gpu-9", .gpu = 9}}};
  {
    std::ofstream(dir_ + "/plugin/checkpoint.json")
        << driver::CheckpointText(boot_id, {{evil.uid, evil}});
  }
  StartNode();
  // Restored before the plugin registers, so logged by now.
  const std::string log = ReadFile(dir_ + "/node.log");
  EXPECT_THAT(log, HasSubstr("claim default/evil\\nk8shazgpu-node: registered with the "
                             "kubelet\\e[2K (uid-evil): gpu-9 is no longer a device"));
  EXPECT_EQ(log.find("evil\n"), std::string::npos) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
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

TEST(NodeDaemonFlagsTest, BadCacheFlagsAreOneLineUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cache", "yes"}, "--cache: expected on or off, got 'yes'"},
      {{"--cache-disk-limit", "lots"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-disk-limit", "-5Gi"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-workers", "0"}, "--cache-workers: expected 1 to 64, got '0'"},
      {{"--cache-disk-limit", "150%"}, "--cache-disk-limit: a share of the disk must be 1% to"},
      {{"--cache-disk-limit", "x%"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-pull-deadline", "soon"}, "--cache-pull-deadline: "},
      {{"--cache-local-git", "yes"}, "--cache-local-git: expected on or off, got 'yes'"},
      {{"--kube-api-qps", "0"}, "--kube-api-qps: expected a number above 0 up to 10000, got '0'"},
      {{"--kube-api-qps", "nan"}, "--kube-api-qps: expected a number above 0"},
      {{"--kube-api-burst", "many"}, "--kube-api-burst: expected 1 to 100000, got 'many'"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> argv = {K8SHAZGPU_NODE_BINARY, "--node-name", "n"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CliResult result = RunProgram(argv, {});
    EXPECT_EQ(result.exit_code, 2) << flags[0];
    EXPECT_THAT(result.err, HasSubstr(message));
  }
}

}  // namespace
}  // namespace canhazgpu::testing
