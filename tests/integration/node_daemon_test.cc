// k8shazgpu-node end to end: registration, publishing, prepare and
// unprepare, restarts, health, and its flags.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/node_daemon_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

TEST_F(NodeDaemonTest, RegistersPublishesAndFollowsLocalReservations) {
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> again =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef claim = AllocatedClaim("after-outage", "gpu-2");
  EXPECT_EQ((*(*kubelet)->NodePrepareResources({claim}))[claim.uid].error, "")
      << ReadFile(dir_ + "/node.log");
}

TEST_F(NodeDaemonTest, ConcurrentPreparesGiveEachGpuToExactlyOneClaim) {
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> again =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> again =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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

// The GPUs' MPS state beside the host store: one directory per GPU with
// shares, each holding its shares' records.
std::map<std::string, std::vector<std::string>> MpsShares(const std::string& state) {
  std::map<std::string, std::vector<std::string>> out;
  std::error_code ec;
  for (const auto& gpu : std::filesystem::directory_iterator(state, ec)) {
    if (!gpu.is_directory()) continue;
    std::vector<std::string>& shares = out[gpu.path().filename()];
    for (const auto& s : std::filesystem::directory_iterator(gpu.path() / "shares", ec)) {
      shares.push_back(s.path().filename());
    }
    std::sort(shares.begin(), shares.end());
  }
  return out;
}

TEST_F(NodeDaemonTest, SharesUnderMpsSurviveASigkillAtEveryKillPoint) {
  constexpr char kShareA[] = "0a0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
  constexpr char kShareB[] = "0b0e8a51-7c33-4a43-a0b4-2f1f7e0c6f10";
  const std::map<std::string, std::string> sharing = {
      {"K8SHAZGPU_GPU_SHARING", "memory"}, {"K8SHAZGPU_DRIVER_ROOT", FAKE_MPS_DRIVER_ROOT}};
  kill(node_, SIGTERM);
  ASSERT_EQ(ExitCodeOf(node_), 0);
  StartNode(sharing);
  auto kubelet = kubeletplugin::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef a = driver::testing::CreateAllocatedShareClaim(
                                 *client_, "default", "a", {{"gpu-1", kShareA, "10Gi"}})
                                 .value();
  ASSERT_EQ((*(*kubelet)->NodePrepareResources({a}))[a.uid].error, "")
      << ReadFile(dir_ + "/node.log");
  const std::string mps = dir_ + "/mps";
  ASSERT_EQ(MpsShares(mps).size(), 1u);
  const std::string gpu = MpsShares(mps).begin()->first;
  EXPECT_EQ(MpsShares(mps)[gpu], std::vector<std::string>{kShareA});

  // Killed after a share's MPS daemon, spec and reservation, before
  // PrepareCompleted.
  kill(node_, SIGKILL);
  ExitCodeOf(node_);
  std::map<std::string, std::string> crashing = sharing;
  crashing["K8SHAZGPU_TEST_CRASH_BEFORE_PREPARE_COMPLETED"] = "1";
  StartNode(crashing);
  kubelet = kubeletplugin::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  const driver::ClaimRef b = driver::testing::CreateAllocatedShareClaim(
                                 *client_, "default", "b", {{"gpu-1", kShareB, "20Gi"}})
                                 .value();
  EXPECT_FALSE((*kubelet)->NodePrepareResources({b}).ok());
  EXPECT_EQ(ExitCodeOf(node_), 128 + SIGKILL);
  EXPECT_EQ(MpsShares(mps)[gpu], (std::vector<std::string>{kShareA, kShareB}));

  // Restarted: a is kept whole (its share, its MPS daemon), b is undone.
  StartNode(sharing);
  kubelet = kubeletplugin::KubeletClient::Register(RegistrationSocket());
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  EXPECT_EQ(CheckpointStates(), (std::map<std::string, std::string>{{a.uid, "PrepareCompleted"}}));
  EXPECT_EQ(MpsShares(mps)[gpu], std::vector<std::string>{kShareA});
  EXPECT_TRUE(std::filesystem::exists(mps + "/" + gpu + "/pipe/nvidia-cuda-mps-control.pid"));
  EXPECT_EQ(CdiFiles(), std::vector<std::string>{driver::CdiSpecFileName(a.uid)});
  EXPECT_EQ(TakenGpus(), std::vector<int>{1});

  // The last share's unprepare stops the daemon and leaves nothing behind.
  EXPECT_EQ((*(*kubelet)->NodeUnprepareResources({a}))[a.uid], "");
  EXPECT_TRUE(MpsShares(mps).empty());
  EXPECT_TRUE(CdiFiles().empty());
  EXPECT_TRUE(TakenGpus().empty());
}

TEST_F(NodeDaemonTest, BadClaimsInARequestEachGetALineAndChangeNothing) {
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(RegistrationSocket());
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

TEST(NodeDaemonFlagsTest, MissingNodeNameAndBadFlagsAreOneLineUsageErrors) {
  CliResult none = RunProgram({K8SHAZGPU_NODE_BINARY}, {});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--node-name (or K8SHAZGPU_NODE_NAME) is required"));
  CliResult bad =
      RunProgram({K8SHAZGPU_NODE_BINARY, "--node-name", "n", "--log-format", "xml"}, {});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("invalid value 'xml' for --log-format: expected text or json"));
}

TEST(NodeDaemonFlagsTest, BadCacheFlagsAreOneLineUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cache", "yes"}, "invalid value 'yes' for --cache: expected on or off"},
      {{"--cache-disk-limit", "lots"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-disk-limit", "-5Gi"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-workers", "0"},
       "invalid value '0' for --cache-workers: expected an integer from 1 to 64"},
      {{"--cache-disk-limit", "150%"}, "--cache-disk-limit: a share of the disk must be 1% to"},
      {{"--cache-disk-limit", "x%"}, "--cache-disk-limit: expected a byte count"},
      {{"--cache-pull-deadline", "soon"}, "invalid duration 'soon'"},
      {{"--cache-local-git", "yes"},
       "invalid value 'yes' for --cache-local-git: expected on or off"},
      {{"--kube-api-qps", "0"}, "--kube-api-qps: expected a number above 0 up to 10000, got '0'"},
      {{"--kube-api-qps", "nan"}, "--kube-api-qps: expected a number above 0"},
      {{"--kube-api-burst", "many"},
       "invalid value 'many' for --kube-api-burst: expected an integer from 1 to 100000"},
      {{"--provider", "intel"},
       "invalid value 'intel' for --provider: expected nvidia, amd or fake"},
      {{"--gpu-sharing", "mps"}, "invalid value 'mps' for --gpu-sharing: expected none or memory"},
      {{"--gpu-reserved-memory", "lots"},
       "--gpu-reserved-memory: expected a byte count such as 512Mi or 1Gi, got 'lots'"},
      {{"--gpu-reserved-memory", "-1Gi"}, "--gpu-reserved-memory: expected a byte count"},
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
