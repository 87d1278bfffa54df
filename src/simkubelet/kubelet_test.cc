// The simulated kubelet against the simulated API server and a real plugin
// (PluginServer on a FakeNodeService) on unix sockets, with real processes
// as containers.
#include "simkubelet/kubelet.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/escaping.h"
#include "core/strings.h"
#include "driver/cdi_spec.h"
#include "driver/testing/allocated_claim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeletplugin/testing/plugin_harness.h"
#include "kubesim/testing/test_api_server.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kNode[] = "node-a";
constexpr char kNs[] = "ml";

// Waits (generously) for `done`; the tests never sleep for a fixed time.
bool Eventually(const std::function<bool()>& done,
                std::chrono::seconds timeout = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

class KubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::ClientOptions client_options;
    client_options.qps = 1000;
    client_options.burst = 1000;
    client_ = *kube::Client::Create(api_.Config(), client_options);
    ASSERT_TRUE(client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", kNs}}}}).ok());
    auto server = harness_.Start(harness_.Options());
    ASSERT_TRUE(server.ok()) << server.status();
    plugin_ = std::move(*server);

    KubeletOptions options;
    options.node_name = kNode;
    options.registrar_dir = harness_.Options().registrar_dir;
    options.cdi_dir = cdi_dir();
    options.pods_dir = harness_.dir.path() + "/pods";
    options.root_dir = root_dir();
    options.node_labels = {{"zone", "a"}};
    options.prepare_retry = std::chrono::milliseconds(100);
    options.restart_backoff_initial = std::chrono::milliseconds(50);
    options.restart_backoff_max = std::chrono::milliseconds(200);
    kubelet_ = std::make_unique<Kubelet>(*client_, api_.server().logs(), options);
    ASSERT_TRUE(kubelet_->Start().ok());
    ASSERT_TRUE(kubelet_->plugins().WaitForRegistrations(kubeletplugin::kDriverName, 1,
                                                         std::chrono::seconds(30)));
  }

  void TearDown() override { kubelet_->Stop(); }

  std::string cdi_dir() const { return harness_.dir.path() + "/cdi"; }
  std::string root_dir() const { return harness_.dir.path() + "/root"; }

  // Writes `text` to `path` under the node root, directories included.
  void WriteUnderRoot(const std::string& path, const std::string& text,
                      std::filesystem::perms perms = std::filesystem::perms::owner_read |
                                                     std::filesystem::perms::owner_write) {
    const std::filesystem::path file = root_dir() + path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    std::filesystem::permissions(file, perms);
  }

  bool HasEvent(const std::string& reason, const std::string& message) {
    for (const json& e : Events(reason)) {
      if (e["message"] == message) return true;
    }
    return false;
  }

  // An allocated claim whose prepare returns GPU 3 with a CDI spec as our
  // driver writes it.
  driver::ClaimRef MakeClaim(const std::string& name) {
    auto claim = driver::testing::CreateAllocatedClaim(*client_, kNs, name, {"gpu-3"}, kNode);
    EXPECT_TRUE(claim.ok()) << claim.status();
    driver::ClaimCdiInput input;
    input.claim_uid = claim->uid;
    input.claim_namespace = kNs;
    input.claim_name = name;
    input.devices = {{.name = "gpu-3", .uuid = "GPU-3333", .gpu_minor = 3, .requests = {"gpu"}}};
    EXPECT_TRUE(driver::WriteCdiSpec(cdi_dir(), claim->uid, driver::ClaimCdiSpec(input)).ok());
    driver::PreparedDevice device;
    device.request_names = {"gpu"};
    device.pool = kNode;
    device.device = "gpu-3";
    device.cdi_device_ids = driver::CdiDeviceIdsFor(claim->uid, "gpu-3", {"gpu"});
    harness_.node.SetPrepareResult(claim->uid, {.devices = {device}, .error = ""});
    return *claim;
  }

  // Creates the pod bound to our node and reserves `claim` for it, as the
  // scheduler would; returns the pod's uid.
  std::string MakePod(const std::string& name, json container, const driver::ClaimRef* claim,
                      json extra_spec = json::object()) {
    container["name"] = "main";
    container["image"] = "busybox";
    json spec = {
        {"nodeName", kNode}, {"restartPolicy", "Never"}, {"containers", json::array({container})}};
    if (claim != nullptr) {
      spec["resourceClaims"] = {{{"name", "gpu"}, {"resourceClaimName", claim->name}}};
      spec["containers"][0]["resources"] = {{"claims", {{{"name", "gpu"}}}}};
    }
    spec.update(extra_spec);
    auto pod = client_->CreateObject(
        kube::kPods, kNs,
        {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}}}, {"spec", spec}});
    EXPECT_TRUE(pod.ok()) << pod.status();
    const std::string uid = (*pod)["metadata"]["uid"];
    if (claim != nullptr) {
      // reservedFor is status: read, set, write the status subresource.
      auto current = client_->Get(kube::kResourceClaims, kNs, claim->name);
      EXPECT_TRUE(current.ok()) << current.status();
      (*current)["status"]["reservedFor"] = {{{"resource", "pods"}, {"name", name}, {"uid", uid}}};
      auto reserved = client_->UpdateStatus(kube::kResourceClaims, kNs, *current);
      EXPECT_TRUE(reserved.ok()) << reserved.status();
    }
    return uid;
  }

  json GetPod(const std::string& name) {
    auto pod = client_->Get(kube::kPods, kNs, name);
    return pod.ok() ? *pod : json();
  }
  std::string Phase(const std::string& name) {
    return GetPod(name).value("/status/phase"_json_pointer, std::string());
  }
  json MainState(const std::string& name) {
    return GetPod(name).value("/status/containerStatuses/0"_json_pointer, json());
  }
  bool WaitForPhase(const std::string& name, const std::string& phase) {
    return Eventually([&] { return Phase(name) == phase; });
  }
  bool Unprepared(const std::string& uid) {
    for (const driver::ClaimRef& c : harness_.node.unprepared_claims()) {
      if (c.uid == uid) return true;
    }
    return false;
  }
  std::vector<json> Events(const std::string& reason) {
    std::vector<json> out;
    auto list = client_->List(kube::kEvents, kNs);
    if (!list.ok()) return out;
    for (const json& e : (*list)["items"]) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  }

  kubesim::TestApiServer api_;
  std::unique_ptr<kube::Client> client_;
  kubeletplugin::testing::PluginHarness harness_;
  std::unique_ptr<kubeletplugin::PluginServer> plugin_;
  std::unique_ptr<Kubelet> kubelet_;
};

TEST_F(KubeletTest, RegistersTheNodeReadyWithItsLabels) {
  auto node = client_->Get(kube::kNodes, "", kNode);
  ASSERT_TRUE(node.ok()) << node.status();
  const json labels = (*node)["metadata"]["labels"];
  EXPECT_EQ(labels["kubernetes.io/hostname"], kNode);
  EXPECT_EQ(labels["kubernetes.io/os"], "linux");
  EXPECT_EQ(labels["canhazgpu.dev/gpu"], "true");
  EXPECT_EQ(labels["zone"], "a");
  bool ready = false;
  for (const json& c : (*node)["status"]["conditions"]) {
    if (c["type"] == "Ready") ready = c["status"] == "True";
  }
  EXPECT_TRUE(ready);
  EXPECT_EQ((*node)["status"]["allocatable"]["pods"], "110");
  EXPECT_EQ((*node)["status"]["nodeInfo"]["operatingSystem"], "linux");
}

TEST_F(KubeletTest, PluginIsToldItIsRegistered) {
  auto status = plugin_->registration_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->registered);
}

TEST_F(KubeletTest, ContainerSeesItsCdiEnvironmentAndSucceeds) {
  const driver::ClaimRef claim = MakeClaim("claim-1");
  MakePod("p",
          {{"command",
            {"sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES uuid=$NVIDIA_VISIBLE_DEVICES pod=$POD"}},
           {"env",
            {{{"name", "POD"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}}}}},
          &claim);
  ASSERT_TRUE(WaitForPhase("p", "Succeeded")) << GetPod("p").dump();
  const json state = MainState("p");
  EXPECT_EQ(state["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(state["state"]["terminated"]["reason"], "Completed");
  auto logs = client_->Logs(kNs, "p");
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(*logs, "gpus=0 uuid=GPU-3333 pod=p\n");
  // A finished pod gives its claim back at once.
  EXPECT_TRUE(Eventually([&] { return Unprepared(claim.uid); }));
  ASSERT_EQ(harness_.node.prepared_claims().size(), 1u);
  EXPECT_EQ(harness_.node.prepared_claims()[0].name, "claim-1");
}

// Issue 30: `kubectl logs` of a running pod that had printed nothing said
// it was waiting to start (ContainerCreating).
TEST_F(KubeletTest, ARunningContainerThatPrintedNothingHasEmptyLogs) {
  MakePod("p", {{"command", {"sleep", "30"}}}, nullptr);
  ASSERT_TRUE(WaitForPhase("p", "Running"));
  absl::StatusOr<std::string> logs = client_->Logs(kNs, "p");
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(*logs, "");
}

TEST_F(KubeletTest, NonZeroExitFailsThePodWithTheExitCode) {
  MakePod("p", {{"command", {"sh", "-c", "echo oops >&2; exit 3"}}}, nullptr);
  ASSERT_TRUE(WaitForPhase("p", "Failed"));
  const json state = MainState("p");
  EXPECT_EQ(state["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ(state["state"]["terminated"]["reason"], "Error");
  EXPECT_EQ(state["restartCount"], 0);
  EXPECT_EQ(*client_->Logs(kNs, "p"), "oops\n");
}

TEST_F(KubeletTest, PrepareErrorIsAnEventVerbatimAndThePodWaitsUntilItClears) {
  const driver::ClaimRef claim = MakeClaim("claim-1");
  const driver::PrepareResult good = {
      .devices = {{.pool = kNode,
                   .device = "gpu-3",
                   .cdi_device_ids = {driver::CdiDeviceId(claim.uid, "gpu-3")}}},
      .error = ""};
  const std::string error =
      "GPU 3 is reserved locally by alice until 14:00; ask them or pick another node";
  harness_.node.SetPrepareResult(claim.uid, {.devices = {}, .error = error});
  MakePod("p", {{"command", {"true"}}}, &claim);
  const std::string expected = StrCat(
      "Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources "
      "failed for ResourceClaim claim-1: ",
      error);
  ASSERT_TRUE(Eventually([&] {
    for (const json& e : Events("FailedPrepareDynamicResources")) {
      if (e["message"] == expected) return true;
    }
    return false;
  }));
  const json event = Events("FailedPrepareDynamicResources").back();
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["involvedObject"]["name"], "p");
  EXPECT_EQ(event["source"]["component"], "kubelet");
  EXPECT_EQ(Phase("p"), "Pending");
  EXPECT_EQ(MainState("p")["state"]["waiting"]["reason"], "ContainerCreating");

  harness_.node.SetPrepareResult(claim.uid, good);
  EXPECT_TRUE(WaitForPhase("p", "Succeeded"));
}

TEST_F(KubeletTest, ATemplatesClaimIsFoundThroughThePodsStatus) {
  const driver::ClaimRef claim = MakeClaim("p-gpu-x7k2q");
  auto pod = client_->CreateObject(
      kube::kPods, kNs,
      {{"apiVersion", "v1"},
       {"kind", "Pod"},
       {"metadata", {{"name", "p"}}},
       {"spec",
        {{"nodeName", kNode},
         {"restartPolicy", "Never"},
         {"resourceClaims", {{{"name", "gpu"}, {"resourceClaimTemplateName", "one-gpu"}}}},
         {"containers",
          {{{"name", "main"},
            {"image", "busybox"},
            {"command", {"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}},
            {"resources", {{"claims", {{{"name", "gpu"}}}}}}}}}}}});
  ASSERT_TRUE(pod.ok()) << pod.status();
  // Until the claim controller names the generated claim, the kubelet waits.
  const std::string not_yet =
      "Failed to prepare dynamic resources: prepare dynamic resources: claim gpu: ResourceClaim "
      "not created yet";
  ASSERT_TRUE(Eventually([&] {
    for (const json& e : Events("FailedPrepareDynamicResources")) {
      if (e["message"] == not_yet) return true;
    }
    return false;
  }));
  // Named but not reserved for the pod: still waiting, and told why.
  kube::PatchOptions status;
  status.subresource = "status";
  ASSERT_TRUE(client_
                  ->Patch(kube::kPods, kNs, "p", kube::PatchType::kMerge,
                          {{"status",
                            {{"resourceClaimStatuses",
                              {{{"name", "gpu"}, {"resourceClaimName", claim.name}}}}}}},
                          status)
                  .ok());
  const std::string uid = (*pod)["metadata"]["uid"];
  ASSERT_TRUE(Eventually([&] {
    for (const json& e : Events("FailedPrepareDynamicResources")) {
      if (e["message"].get<std::string>().find("is not allowed to use ResourceClaim p-gpu-x7k2q") !=
          std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  EXPECT_EQ(Phase("p"), "Pending");
  auto current = client_->Get(kube::kResourceClaims, kNs, claim.name);
  ASSERT_TRUE(current.ok());
  (*current)["status"]["reservedFor"] = {{{"resource", "pods"}, {"name", "p"}, {"uid", uid}}};
  ASSERT_TRUE(client_->UpdateStatus(kube::kResourceClaims, kNs, *current).ok());
  ASSERT_TRUE(WaitForPhase("p", "Succeeded"));
  EXPECT_EQ(*client_->Logs(kNs, "p"), "0\n");
}

TEST_F(KubeletTest, GracefulDeletionStopsTheContainerUnpreparesAndRemovesThePod) {
  const driver::ClaimRef claim = MakeClaim("claim-1");
  // "$$" is Kubernetes' escape for "$": the shell sees $$, its pid.
  MakePod("p", {{"command", {"sh", "-c", "echo $$$$ > pid; echo up; exec sleep 1000"}}}, &claim,
          {{"terminationGracePeriodSeconds", 5}});
  ASSERT_TRUE(WaitForPhase("p", "Running"));
  ASSERT_TRUE(Eventually([&] {
    auto logs = client_->Logs(kNs, "p");
    return logs.ok() && *logs == "up\n";
  }));
  const json running = MainState("p");
  EXPECT_TRUE(running["state"].contains("running"));
  EXPECT_EQ(running["ready"], true);
  const std::string uid = GetPod("p")["metadata"]["uid"];
  std::ifstream pid_file(StrCat(harness_.dir.path(), "/pods/", kNs, "_p_", uid, "/main/pid"));
  pid_t pid = 0;
  pid_file >> pid;
  ASSERT_GT(pid, 0);

  // The server marks it (deletionTimestamp, grace period 5 s); the kubelet
  // stops the container, unprepares and removes the pod with grace 0.
  ASSERT_TRUE(client_->Delete(kube::kPods, kNs, "p").ok());
  EXPECT_TRUE(Eventually(
      [&] { return kube::IsApiNotFound(client_->Get(kube::kPods, kNs, "p").status()); }));
  EXPECT_FALSE(Events("Killing").empty());
  EXPECT_TRUE(Eventually([&] { return Unprepared(claim.uid); }));
  EXPECT_TRUE(Eventually([&] { return ::kill(pid, 0) != 0; }));
}

TEST_F(KubeletTest, DeviceHealthShowsInTheContainerStatus) {
  const driver::ClaimRef claim = MakeClaim("claim-1");
  MakePod("p", {{"command", {"sleep", "1000"}}}, &claim, {{"terminationGracePeriodSeconds", 1}});
  auto health_of_gpu3 = [&] {
    // (No container status at all until the container has started.)
    const json state = MainState("p");
    if (!state.is_object()) return std::string();
    const json status = state.value("/allocatedResourcesStatus"_json_pointer, json::array());
    if (status.size() != 1 || status[0]["name"] != "claim:gpu/gpu") return std::string();
    const json resources = status[0]["resources"];
    if (resources.size() != 1 || resources[0]["resourceID"] != "gpu.canhazgpu.dev/node-a/gpu-3") {
      return std::string();
    }
    return resources[0]["health"].get<std::string>();
  };
  // No report yet: Unknown.
  ASSERT_TRUE(Eventually([&] { return health_of_gpu3() == "Unknown"; })) << GetPod("p").dump();
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().Now().time_since_epoch())
          .count();
  harness_.health.Set({{.pool = kNode,
                        .device = "gpu-3",
                        .state = driver::DeviceHealth::State::kUnhealthy,
                        .last_updated_unix = now,
                        .timeout_seconds = 600,
                        .message = "XID 79: fallen off the bus"}});
  EXPECT_TRUE(Eventually([&] { return health_of_gpu3() == "Unhealthy"; })) << GetPod("p").dump();
  harness_.health.Set({{.pool = kNode,
                        .device = "gpu-3",
                        .state = driver::DeviceHealth::State::kHealthy,
                        .last_updated_unix = now,
                        .timeout_seconds = 600}});
  EXPECT_TRUE(Eventually([&] { return health_of_gpu3() == "Healthy"; }));
}

TEST_F(KubeletTest, AContainerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  MakePod("p", {{"command", {"sh", "-c", "trap '' TERM; echo up; while true; do sleep 1; done"}}},
          nullptr, {{"terminationGracePeriodSeconds", 1}});
  ASSERT_TRUE(Eventually([&] {
    auto logs = client_->Logs(kNs, "p");
    return logs.ok() && *logs == "up\n";
  }));
  ASSERT_TRUE(client_->Delete(kube::kPods, kNs, "p").ok());
  EXPECT_TRUE(Eventually(
      [&] { return kube::IsApiNotFound(client_->Get(kube::kPods, kNs, "p").status()); }));
}

TEST_F(KubeletTest, OnFailureRestartsUntilTheContainerSucceeds) {
  const std::string counter = harness_.dir.path() + "/runs";
  MakePod("p",
          {{"command", {"sh", "-c", "echo run >> \"$RUNS\"; [ $(wc -l < \"$RUNS\") -ge 2 ]"}},
           {"env", {{{"name", "RUNS"}, {"value", counter}}}}},
          nullptr, {{"restartPolicy", "OnFailure"}});
  ASSERT_TRUE(WaitForPhase("p", "Succeeded"));
  const json state = MainState("p");
  EXPECT_EQ(state["restartCount"], 1);
  EXPECT_EQ(state["lastState"]["terminated"]["exitCode"], 1);
  EXPECT_EQ(state["state"]["terminated"]["exitCode"], 0);
  EXPECT_FALSE(Events("BackOff").empty());
}

TEST_F(KubeletTest, ActiveDeadlineKillsThePodAndFailsIt) {
  const driver::ClaimRef claim = MakeClaim("claim-1");
  MakePod("p", {{"command", {"sleep", "1000"}}}, &claim,
          {{"activeDeadlineSeconds", 1}, {"terminationGracePeriodSeconds", 5}});
  ASSERT_TRUE(WaitForPhase("p", "Failed"));
  const json pod = GetPod("p");
  EXPECT_EQ(pod["status"]["reason"], "DeadlineExceeded");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            128 + SIGTERM);
  EXPECT_TRUE(Eventually([&] { return Unprepared(claim.uid); }));
  EXPECT_FALSE(Events("DeadlineExceeded").empty());
}

TEST_F(KubeletTest, CommandThatCannotRunIsAStartError) {
  MakePod("p", {{"command", {"no-such-command-k8shazgpu"}}}, nullptr);
  ASSERT_TRUE(WaitForPhase("p", "Failed"));
  const json terminated = MainState("p")["state"]["terminated"];
  EXPECT_EQ(terminated["reason"], "StartError");
  EXPECT_EQ(terminated["exitCode"], 128);
  EXPECT_THAT(terminated["message"].get<std::string>(),
              HasSubstr("exec: \"no-such-command-k8shazgpu\": executable file not found in $PATH"));
}

TEST_F(KubeletTest, InitContainersRunFirst) {
  const std::string shared = harness_.dir.path() + "/shared";
  json spec = {{"initContainers",
                {{{"name", "init"},
                  {"image", "busybox"},
                  {"command", {"sh", "-c", "echo from-init > \"$SHARED\""}},
                  {"env", {{{"name", "SHARED"}, {"value", shared}}}}}}}};
  MakePod("p",
          {{"command", {"sh", "-c", "cat \"$SHARED\""}},
           {"env", {{{"name", "SHARED"}, {"value", shared}}}}},
          nullptr, spec);
  ASSERT_TRUE(WaitForPhase("p", "Succeeded"));
  EXPECT_EQ(*client_->Logs(kNs, "p", {.container = "main"}), "from-init\n");
  EXPECT_EQ(GetPod("p")["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed");
}

TEST_F(KubeletTest, AnInitContainerThatCannotRunFailsThePod) {
  json spec = {{"initContainers",
                {{{"name", "init"}, {"image", "busybox"}, {"command", {"/no/such/init"}}}}}};
  MakePod("p", {{"command", {"true"}}}, nullptr, spec);
  ASSERT_TRUE(WaitForPhase("p", "Failed"));
  const json pod = GetPod("p");
  EXPECT_EQ(pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "StartError");
  EXPECT_THAT(pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["message"]
                  .get<std::string>(),
              HasSubstr("exec: \"/no/such/init\": stat /no/such/init: no such file or directory"));
  // The container behind it never ran.
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "PodInitializing");
}

TEST_F(KubeletTest, UnknownCdiDeviceKeepsTheContainerFromBeingCreated) {
  auto claim = driver::testing::CreateAllocatedClaim(*client_, kNs, "claim-1", {"gpu-3"}, kNode);
  ASSERT_TRUE(claim.ok());
  // The driver answers with an id no spec in the CDI directory names.
  harness_.node.SetPrepareResult(
      claim->uid, {.devices = {{.pool = kNode,
                                .device = "gpu-3",
                                .cdi_device_ids = {"k8s.gpu.canhazgpu.dev/claim=missing"}}},
                   .error = ""});
  MakePod("p", {{"command", {"true"}}}, &*claim);
  ASSERT_TRUE(Eventually([&] {
    const json state = MainState("p");
    return state.is_object() && state.value("/state/waiting/reason"_json_pointer, std::string()) ==
                                    "CreateContainerError";
  }));
  EXPECT_THAT(MainState("p")["state"]["waiting"]["message"].get<std::string>(),
              HasSubstr("unresolvable CDI devices k8s.gpu.canhazgpu.dev/claim=missing"));
  EXPECT_EQ(Phase("p"), "Pending");
}

// Pod volumes (pod_volumes.h), reached through the rewritten mount paths.

TEST_F(KubeletTest, AnEmptyDirIsSharedFromTheInitContainerAndRemovedWithThePod) {
  const json mount = {{{"name", "work"}, {"mountPath", "/workspace"}}};
  json spec = {{"volumes", {{{"name", "work"}, {"emptyDir", json::object()}}}},
               {"initContainers",
                {{{"name", "init"},
                  {"image", "busybox"},
                  {"command",
                   {"sh", "-c",
                    "mkdir /workspace/vllm && echo from-init > "
                    "'/workspace'/vllm/msg"}},
                  {"volumeMounts", mount}}}}};
  const std::string uid = MakePod(
      "p", {{"command", {"cat", "/workspace/vllm/msg"}}, {"volumeMounts", mount}}, nullptr, spec);
  ASSERT_TRUE(WaitForPhase("p", "Succeeded")) << GetPod("p").dump();
  EXPECT_EQ(*client_->Logs(kNs, "p", {.container = "main"}), "from-init\n");
  const std::string volumes = StrCat(harness_.dir.path(), "/pods/", kNs, "_p_", uid, "/volumes");
  EXPECT_TRUE(std::filesystem::exists(volumes + "/work/vllm/msg"));

  ASSERT_TRUE(client_->Delete(kube::kPods, kNs, "p").ok());
  EXPECT_TRUE(Eventually(
      [&] { return kube::IsApiNotFound(client_->Get(kube::kPods, kNs, "p").status()); }));
  EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(volumes); }));
}

TEST_F(KubeletTest, AProjectedVolumeCarriesConfigMapsBinaryDataByteExact) {
  const std::string part0("\x00\xff\x01part zero\n\xfe", 14);
  const std::string part1("\xff\xff\x00\x00one", 7);
  for (const auto& [name, bytes] : {std::pair{"changes-0", part0}, std::pair{"changes-1", part1}}) {
    std::string encoded;
    absl::Base64Escape(bytes, &encoded);
    ASSERT_TRUE(
        client_
            ->CreateObject(kube::kConfigMaps, kNs,
                           {{"metadata", {{"name", name}}}, {"binaryData", {{"part", encoded}}}})
            .ok());
  }
  auto source = [](const std::string& name, const std::string& path) {
    return json{{"configMap", {{"name", name}, {"items", {{{"key", "part"}, {"path", path}}}}}}};
  };
  json spec = {
      {"volumes",
       {{{"name", "changes"},
         {"projected",
          {{"sources", {source("changes-0", "part-0"), source("changes-1", "part-1")}}}}}}}};
  const std::string out = harness_.dir.path() + "/out";
  std::filesystem::create_directories(out);
  MakePod(
      "p",
      {{"command", {"sh", "-c", "cp /changes/part-0 /changes/part-1 \"$OUT\""}},
       {"env", {{{"name", "OUT"}, {"value", out}}}},
       {"volumeMounts", {{{"name", "changes"}, {"mountPath", "/changes"}, {"readOnly", true}}}}},
      nullptr, spec);
  ASSERT_TRUE(WaitForPhase("p", "Succeeded")) << GetPod("p").dump();
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(out + "/part-0"), part0);
  EXPECT_EQ(read(out + "/part-1"), part1);
}

TEST_F(KubeletTest, AMissingConfigMapKeepsThePodWaitingUntilItExists) {
  json spec = {{"volumes", {{{"name", "settings"}, {"configMap", {{"name", "later"}}}}}}};
  MakePod("p",
          {{"command", {"cat", "/etc/settings/greeting"}},
           {"volumeMounts", {{{"name", "settings"}, {"mountPath", "/etc/settings"}}}}},
          nullptr, spec);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent("FailedMount",
                    "MountVolume.SetUp failed for volume \"settings\" : configmap \"later\" not "
                    "found");
  }));
  EXPECT_EQ(Events("FailedMount").back()["type"], "Warning");
  EXPECT_EQ(Phase("p"), "Pending");
  EXPECT_EQ(MainState("p")["state"]["waiting"]["reason"], "ContainerCreating");

  ASSERT_TRUE(
      client_
          ->CreateObject(kube::kConfigMaps, kNs,
                         {{"metadata", {{"name", "later"}}}, {"data", {{"greeting", "hello"}}}})
          .ok());
  ASSERT_TRUE(WaitForPhase("p", "Succeeded")) << GetPod("p").dump();
  EXPECT_EQ(*client_->Logs(kNs, "p"), "hello\n");  // (the log ends the last line)
}

TEST_F(KubeletTest, AHostPathIsUnderTheNodeRootAndAbsoluteCommandsComeFromIt) {
  WriteUnderRoot("/var/lib/canhazgpu/cache/hf/model.txt", "weights\n");
  // A binary "in our image": the node root stands in for the image.
  WriteUnderRoot("/usr/local/bin/show",
                 "#!/bin/sh\ncat \"$2/model.txt\" \"$HF_HUB_CACHE/model.txt\"\n",
                 std::filesystem::perms::owner_all);
  json spec = {{"volumes",
                {{{"name", "cache"},
                  {"hostPath", {{"path", "/var/lib/canhazgpu/cache"}, {"type", "Directory"}}}}}}};
  MakePod("p",
          {{"command", {"/usr/local/bin/show", "--dir", "/cache/hf"}},
           {"env", {{{"name", "HF_HUB_CACHE"}, {"value", "/cache/hf"}}}},
           {"volumeMounts", {{{"name", "cache"}, {"mountPath", "/cache"}, {"readOnly", true}}}}},
          nullptr, spec);
  ASSERT_TRUE(WaitForPhase("p", "Succeeded")) << GetPod("p").dump();
  EXPECT_EQ(*client_->Logs(kNs, "p"), "weights\nweights\n");
}

TEST_F(KubeletTest, AMissingHostPathDirectoryIsAFailedMount) {
  json spec = {
      {"volumes",
       {{{"name", "data"}, {"hostPath", {{"path", "/no/such/dir"}, {"type", "Directory"}}}}}}};
  MakePod("p", {{"command", {"true"}}}, nullptr, spec);
  ASSERT_TRUE(Eventually([&] {
    return HasEvent("FailedMount",
                    "MountVolume.SetUp failed for volume \"data\" : hostPath type check failed: "
                    "/no/such/dir is not a directory");
  }));
  EXPECT_EQ(Phase("p"), "Pending");
}

TEST_F(KubeletTest, AVolumeTypeTheSimulatorCannotMountIsNamedAndThePodNeverStarts) {
  json spec = {{"volumes", {{{"name", "creds"}, {"secret", {{"secretName", "s"}}}}}}};
  MakePod("p", {{"command", {"true"}}}, nullptr, spec);
  ASSERT_TRUE(Eventually([&] {
    for (const json& e : Events("FailedMount")) {
      if (e["message"].get<std::string>().find(
              "volume \"creds\" : volume type secret is not supported by the simulated kubelet") !=
          std::string::npos)
        return true;
    }
    return false;
  }));
  EXPECT_EQ(Phase("p"), "Pending");
}

}  // namespace
}  // namespace canhazgpu::simkubelet
