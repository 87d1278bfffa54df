// k8shazgpu-sim cluster end to end: the real binary with the real
// k8shazgpu-node on every node, read through our client and the real
// canhazgpu on a node.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "driver/cdi_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/deploy_manifests.h"
#include "integration/sim_cluster_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubesim/patch.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// Every node runs the cache agent against a container runtime of its own:
// a plan's image lands on the nodes its scope names, and an image no
// registry has fails there with the runtime's message.
TEST_F(SimClusterTest, TheNodesCacheAgentsPullAPlansImagesWhereItsScopeSays) {
  const kube::ResourceRef plans{"canhazgpu.dev", "v1alpha1", "cacheplans", false};
  const kube::ResourceRef statuses{"canhazgpu.dev", "v1alpha1", "nodecachestatuses", false};
  const json items = json::array(
      {{{"name", "vllm"}, {"type", "image"}, {"image", {{"ref", "vllm/vllm-openai:latest"}}}},
       {{"name", "missing"},
        {"type", "image"},
        {"image", {{"ref", "example.com/nobody/nothing:1"}}},
        {"scope", {{"nodeSelector", {{"kubernetes.io/hostname", "node-1"}}}}}}});
  ASSERT_TRUE(client_
                  ->CreateObject(plans, "",
                                 {{"apiVersion", "canhazgpu.dev/v1alpha1"},
                                  {"kind", "CachePlan"},
                                  {"metadata", {{"name", "default"}}},
                                  {"spec", {{"items", items}}}})
                  .ok());
  auto states = [&](const std::string& node) {
    std::map<std::string, std::string> out;
    json status = client_->Get(statuses, "", node).value_or(json::object());
    for (const json& item : status.value("status", json::object()).value("items", json::array())) {
      out[item.value("name", "")] = item.value("state", "") + " " + item.value("message", "");
    }
    return out;
  };
  // The agents read the plans every 30 s: wait up to a minute.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  std::map<std::string, std::string> node0, node1;
  while (std::chrono::steady_clock::now() < deadline) {
    node0 = states("node-0");
    node1 = states("node-1");
    if (node0.count("vllm") && node0["vllm"].starts_with("Ready") && node1.count("missing") &&
        node1["missing"].starts_with("Failed") && node1["vllm"].starts_with("Ready")) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_THAT(node0["vllm"], ::testing::StartsWith("Ready")) << ReadFile(Log());
  EXPECT_EQ(node0.count("missing"), 0u) << "the scope names node-1 only";
  EXPECT_THAT(node1["vllm"], ::testing::StartsWith("Ready"));
  EXPECT_THAT(node1["missing"], ::testing::StartsWith("Failed"));
  EXPECT_THAT(node1["missing"], HasSubstr("example.com/nobody/nothing:1"));
  // A disk ceiling without being asked for one: 40% of the file system.
  const json report = client_->Get(statuses, "", "node-0").value_or(json::object());
  EXPECT_GT(report["status"]["disk"].value("limitBytes", int64_t{0}), 0) << report.dump();
}

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
  // The kubelet's 1 s for GetInfo is short for a loaded CI machine running
  // several clusters at once.
  kubeletplugin::KubeletClientOptions patient;
  patient.get_info_timeout = std::chrono::seconds(10);
  absl::StatusOr<std::unique_ptr<kubeletplugin::KubeletClient>> kubelet =
      kubeletplugin::KubeletClient::Register(
          NodeDir("node-0") + "/plugins_registry/gpu.canhazgpu.dev-reg.sock", patient);
  ASSERT_TRUE(kubelet.ok()) << kubelet.status();
  ASSERT_TRUE(client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", "ml"}}}}).ok());
  // Allocated and reserved in one write: the control plane deallocates a
  // claim that nobody reserves, and a pod consumer would have to exist.
  json object = client_
                    ->CreateObject(kube::kResourceClaims, "ml", json::parse(R"({
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mig"},
      "spec": {"devices": {"requests": [{"name": "gpu",
        "exactly": {"deviceClassName": "mig.canhazgpu.dev"}}]}}})"))
                    .value();
  object["status"] = json::parse(R"({
      "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.canhazgpu.dev",
        "pool": "node-0", "device": "gpu-0-mig-1g10gb-19-1"}]}},
      "reservedFor": [{"apiGroup": "batch", "resource": "jobs", "name": "train",
        "uid": "7c1e5a52-0000-4000-8000-000000000001"}]})");
  ASSERT_TRUE(client_->UpdateStatus(kube::kResourceClaims, "ml", object).ok());
  const driver::ClaimRef claim{
      .namespace_name = "ml", .uid = object["metadata"]["uid"], .name = "mig"};
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

TEST_F(SimClusterTest, APodGetsItsGpusRunsWithTheirEnvironmentAndGivesThemBack) {
  CreatePod(
      "train", 2,
      "echo CUDA=$CUDA_VISIBLE_DEVICES NVIDIA=$NVIDIA_VISIBLE_DEVICES; " + WaitForGate("train"));
  ASSERT_TRUE(Eventually([&] { return Logs("train").starts_with("CUDA="); }))
      << Pod("train").dump() << ReadFile(Log());
  const json pod = Pod("train");
  const std::string node = pod["spec"]["nodeName"];
  // The kubelet writes the status once the process has started: its first
  // line may come before.
  EXPECT_TRUE(Eventually([&] { return Phase("train") == "Running"; })) << Pod("train").dump();
  // The two GPUs of the node it landed on, by their UUIDs there.
  const json host = json::parse(ReadFile(NodeDir(node) + "/fake-host.json"));
  EXPECT_EQ(Logs("train"), "CUDA=0,1 NVIDIA=" + host["gpus"][0]["uuid"].get<std::string>() + "," +
                               host["gpus"][1]["uuid"].get<std::string>() + "\n");
  // The node's own canhazgpu sees the claim's reservation, for its user.
  CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, NodeEnv(node));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("alice"));
  EXPECT_THAT(status.out, HasSubstr("train"));
  // The CDI spec the kubelet applied is valid by the official schema.
  std::vector<std::string> specs;
  for (const auto& entry : fs::directory_iterator(NodeDir(node) + "/cdi")) {
    specs.push_back(entry.path());
  }
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(CdiSchemaErrors(specs[0]), "");

  WriteFile(Gate("train"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("train") == "Succeeded"; })) << Pod("train").dump();
  // Unprepared: no CDI spec, no reservation on the node, the claim free.
  EXPECT_TRUE(Eventually([&] { return fs::is_empty(NodeDir(node) + "/cdi"); }));
  EXPECT_TRUE(Eventually([&] {
    CliResult after = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, NodeEnv(node));
    return after.out.find("alice") == std::string::npos;
  }));
  const std::string claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<json> c = client_->Get(kube::kResourceClaims, "default", claim);
    return c.ok() && !(*c)["status"].contains("allocation");
  }));
}

// Issue 30: every container of a claim of several requests got the whole
// claim's CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES.
TEST_F(SimClusterTest, EachContainerSeesOnlyTheDevicesOfTheRequestItNames) {
  CreatePodOfTwoRequests("pair", "gpu.canhazgpu.dev");
  ExpectEachContainerSeesOnlyItsRequest("pair");
}

TEST_F(SimClusterTest, APodThatCannotFitIsToldWhyAndRunsOnceGpusAreFree) {
  // Two GPUs per node: a pod for two on each node fills the cluster.
  CreatePod("first", 2, WaitForGate("first"));
  CreatePod("second", 2, WaitForGate("second"));
  ASSERT_TRUE(
      Eventually([&] { return Phase("first") == "Running" && Phase("second") == "Running"; }));
  CreatePod("third", 2, "echo third ran");
  std::string why;
  ASSERT_TRUE(Eventually([&] {
    for (const json& c : Pod("third")["status"].value("conditions", json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") why = c.value("message", "");
    }
    return !why.empty();
  })) << Pod("third").dump();
  EXPECT_THAT(why, HasSubstr("0/2 nodes are available"));
  EXPECT_THAT(why, HasSubstr("is taken by default/"));
  EXPECT_EQ(Phase("third"), "Pending");

  WriteFile(Gate("first"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("third") == "Succeeded"; })) << Pod("third").dump();
  EXPECT_EQ(Logs("third"), "third ran\n");
  EXPECT_EQ(Pod("third")["spec"]["nodeName"], Pod("first")["spec"]["nodeName"]);
  WriteFile(Gate("second"), "");
}

TEST_F(SimClusterTest, GpusHeldWithCanhazgpuOnANodeSendPodsElsewhere) {
  CliResult reserve = RunProgram({CANHAZGPU_BINARY, "reserve", "--gpus", "2"}, NodeEnv("node-0"));
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  ASSERT_TRUE(Eventually([&] {
    std::vector<std::string> devices = Published("node-0");
    return std::find(devices.begin(), devices.end(), "gpu-1") == devices.end();
  }));
  CreatePod("elsewhere", 1, "echo ok");
  EXPECT_TRUE(Eventually([&] { return Phase("elsewhere") == "Succeeded"; }))
      << Pod("elsewhere").dump();
  EXPECT_EQ(Pod("elsewhere")["spec"]["nodeName"], "node-1");
}

TEST_F(SimClusterTest, DeletingARunningPodStopsItsProcessAndFreesItsGpus) {
  // ($$$$ is the shell's $$: Kubernetes expands $$ to $ in a command.)
  CreatePod("server", 1,
            "echo $$$$ > " + dir_ + "/pid.tmp && mv " + dir_ + "/pid.tmp " + dir_ +
                "/server.pid; exec sleep 600");
  ASSERT_TRUE(
      Eventually([&] { return fs::exists(dir_ + "/server.pid") && Phase("server") == "Running"; }));
  const int pid = std::stoi(ReadFile(dir_ + "/server.pid"));
  const std::string node = Pod("server")["spec"]["nodeName"];
  ASSERT_TRUE(client_->Delete(kube::kPods, "default", "server").ok());
  EXPECT_TRUE(Eventually([&] {
    return kube::IsApiNotFound(client_->Get(kube::kPods, "default", "server").status());
  }));
  EXPECT_TRUE(ProcessGone(pid));
  EXPECT_TRUE(fs::is_empty(NodeDir(node) + "/cdi"));
}

TEST_F(SimClusterTest, KubectlSeesThePodsOutputAndWaitsForItsDeletion) {
  if (std::string why = NoRecentKubectl("the simulated cluster's kubectl test does not run");
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  CreatePod("hello", 1, "echo hello from the cluster; " + WaitForGate("hello"));
  ASSERT_TRUE(Eventually([&] { return !Logs("hello").empty(); }));
  const std::map<std::string, std::string> env = {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}};
  CliResult logs = RunProgram({"kubectl", "logs", "hello"}, env);
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "hello from the cluster\n");
  // The server prints the columns kubectl shows (a Table), as a real one.
  CliResult pods = RunProgram({"kubectl", "get", "pods", "-o", "wide"}, env);
  EXPECT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_THAT(pods.out, ::testing::ContainsRegex("NAME +READY +STATUS +RESTARTS +AGE +IP +NODE"));
  EXPECT_THAT(pods.out, ::testing::ContainsRegex("hello +1/1 +Running +0 +[0-9]+s "));
  // The scheduler's events, as kubectl reads them.
  CliResult events = RunProgram({"kubectl", "get", "events", "-o", "json"}, env);
  EXPECT_EQ(events.exit_code, 0) << events.err;
  EXPECT_THAT(events.out, HasSubstr("\"reason\": \"Scheduled\""));
  CliResult statuses = RunProgram({"kubectl", "get", "nodegpustatuses"}, env);
  EXPECT_EQ(statuses.exit_code, 0) << statuses.err;
  EXPECT_THAT(
      statuses.out,
      ::testing::ContainsRegex(
          "NAME +NODE +FREE +HELD +PREPARED +SHARED +AGE\nnode-0 +node-0 +[0-9]+ +0 +[0-9]+ +0 "
          "+[0-9]+s"));
  // The cache CRDs are installed too, the nodes' cache agents report on a
  // plan, and kubectl prints the columns of both kinds.
  const kube::ResourceRef plans{"canhazgpu.dev", "v1alpha1", "cacheplans", false};
  const json plan = json::parse(R"({"apiVersion": "canhazgpu.dev/v1alpha1", "kind": "CachePlan",
      "metadata": {"name": "default"},
      "spec": {"items": [{"name": "vllm", "type": "image",
                          "image": {"ref": "vllm/vllm-openai:latest"}}]}})");
  ASSERT_TRUE(client_->CreateObject(plans, "", plan).ok());
  ASSERT_TRUE(Eventually([&] {
    json p = client_->Get(plans, "", "default").value_or(json::object());
    return p.value("status", json::object()).value("summary", json::object()).value("ready", 0) ==
           2;
  }));
  CliResult cache_plans = RunProgram({"kubectl", "get", "cacheplans"}, env);
  EXPECT_EQ(cache_plans.exit_code, 0) << cache_plans.err;
  EXPECT_THAT(cache_plans.out,
              ::testing::ContainsRegex("NAME +ITEMS +NODES +READY +PULLING +FAILED +AGE\n"
                                       "default +1 +2 +2 +0 +0 +[0-9]+s"));
  CliResult node_caches = RunProgram({"kubectl", "get", "nodecachestatuses"}, env);
  EXPECT_EQ(node_caches.exit_code, 0) << node_caches.err;
  // The limit: the default ceiling, 40% of the file system.
  EXPECT_THAT(node_caches.out,
              ::testing::ContainsRegex("NAME +NODE +USED +LIMIT +UPDATED +AGE\n"
                                       "node-0 +node-0 +0 +[1-9][0-9]* +[0-9]+s +[0-9]+s\n"
                                       "node-1 +node-1 "));
  // kubectl delete waits until the kubelet has stopped the pod and removed it.
  CliResult deleted = RunProgram({"kubectl", "delete", "pod", "hello", "--timeout=60s"}, env);
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "hello").status()));
}

// The node root (DIR/nodes/<node>/root) is both the node's / for hostPath
// volumes — its cache is the agent's --cache-root — and the image for our
// binaries: /usr/local/bin/k8shazgpu is the CLI built beside the simulator.
// The pod is pinned as `k8shazgpu vllm run` pins it, by required node
// affinity on the node's name.
TEST_F(SimClusterTest, APodSeesItsNodesCacheAndOurCliThroughTheNodeRoot) {
  const std::string cache = NodeDir("node-1") + "/root/var/lib/canhazgpu/cache";
  ASSERT_TRUE(fs::is_directory(cache)) << ReadFile(Log());
  ASSERT_TRUE(fs::exists(NodeDir("node-1") + "/root/usr/local/bin/k8shazgpu"));
  fs::create_directories(cache + "/hf");
  std::ofstream(cache + "/hf/probe") << "cached on node-1\n";

  const json mount = {{{"name", "cache"}, {"mountPath", "/cache"}, {"readOnly", true}}};
  const json field = {
      {"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({"node-1"})}};
  const json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "cached"}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms", json::array({{{"matchFields", json::array({field})}}})}}}}}}},
        {"volumes",
         {{{"name", "cache"},
           {"hostPath", {{"path", "/var/lib/canhazgpu/cache"}, {"type", "Directory"}}}}}},
        {"initContainers",
         {{{"name", "cli"},
           {"image", "ubuntu"},
           {"command", {"/usr/local/bin/k8shazgpu", "--version"}}}}},
        {"containers",
         {{{"name", "main"},
           {"image", "ubuntu"},
           {"command", {"sh", "-c", "cat \"$HF_HUB_CACHE/probe\""}},
           {"env", {{{"name", "HF_HUB_CACHE"}, {"value", "/cache/hf"}}}},
           {"volumeMounts", mount}}}}}}};
  ASSERT_TRUE(client_->CreateObject(kube::kPods, "default", pod).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && Phase("cached") != "Succeeded" &&
         Phase("cached") != "Failed") {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(Phase("cached"), "Succeeded") << Pod("cached").dump() << ReadFile(Log());
  EXPECT_EQ(Pod("cached")["spec"]["nodeName"], "node-1");
  EXPECT_THAT(client_->Logs("default", "cached", {.container = "cli"}).value_or(""),
              ::testing::StartsWith("k8shazgpu "));
  EXPECT_EQ(client_->Logs("default", "cached", {.container = "main"}).value_or(""),
            "cached on node-1\n");
}

TEST_F(SimClusterTest, TheExamplePodOfDeployRuns) {
  absl::StatusOr<std::vector<json>> objects =
      yaml::DocumentsToJson(ReadFile(std::string(DEPLOY_DIR) + "/examples/gpu-pod.yaml"));
  ASSERT_TRUE(objects.ok()) << objects.status();
  for (const json& object : *objects) {
    EXPECT_THAT(StrictValidationErrors(object), ::testing::IsEmpty()) << object.dump();
    const kube::ResourceRef ref = object["kind"] == "Pod" ? kube::kPods : kTemplates;
    ASSERT_TRUE(client_->CreateObject(ref, "default", object).ok());
  }
  EXPECT_TRUE(Eventually([&] { return Phase("gpu-hello") == "Succeeded"; }))
      << Pod("gpu-hello").dump();
  EXPECT_THAT(Logs("gpu-hello"),
              ::testing::StartsWith("CUDA_VISIBLE_DEVICES=0 NVIDIA_VISIBLE_DEVICES=GPU-"));
}

// The same cluster as it looks when it runs NVIDIA's DRA driver.
class NvidiaSimClusterTest : public SimClusterTest {
 protected:
  void SetUp() override { StartCluster({"--driver", "nvidia"}); }
};

TEST_F(NvidiaSimClusterTest, SlicesAndClassesAreNvidiasAndOursAreAbsent) {
  absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
  ASSERT_TRUE(slices.ok());
  std::set<std::string> devices;
  for (json slice : (*slices)["items"]) {
    EXPECT_EQ(slice["spec"]["driver"], "gpu.nvidia.com");
    EXPECT_EQ(slice["spec"]["pool"]["name"], slice["spec"]["nodeName"]);
    for (const json& d : slice["spec"].value("devices", json::array())) {
      devices.insert(d["name"]);
      EXPECT_TRUE(d["attributes"].contains("uuid")) << d.dump();
      EXPECT_TRUE(d["attributes"]["cudaComputeCapability"].contains("version")) << d.dump();
      EXPECT_TRUE(d["capacity"].contains("memory")) << d.dump();
      if (d["attributes"]["type"]["string"] == "mig") {
        EXPECT_TRUE(d["attributes"].contains("parentUUID")) << d.dump();
        EXPECT_TRUE(d["attributes"].contains("profile")) << d.dump();
      }
    }
    slice["apiVersion"] = "resource.k8s.io/v1";
    slice["kind"] = "ResourceSlice";
    EXPECT_THAT(StrictValidationErrors(slice), ::testing::IsEmpty()) << slice.dump();
  }
  EXPECT_TRUE(devices.contains("gpu-0")) << ::testing::PrintToString(devices);
  EXPECT_TRUE(devices.contains("gpu-1"));
  EXPECT_EQ(devices.size(), 9u) << ::testing::PrintToString(devices);
  for (const std::string klass : {"gpu.nvidia.com", "mig.nvidia.com"}) {
    absl::StatusOr<json> c = client_->Get(kube::kDeviceClasses, "", klass);
    ASSERT_TRUE(c.ok()) << klass;
    EXPECT_THAT((*c)["spec"]["selectors"][0]["cel"]["expression"].get<std::string>(),
                HasSubstr("device.attributes[\"gpu.nvidia.com\"].type =="));
  }
  for (const std::string klass : {"gpu.canhazgpu.dev", "mig.canhazgpu.dev"}) {
    EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kDeviceClasses, "", klass).status()))
        << klass;
  }
  const kube::ResourceRef crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
  EXPECT_TRUE(
      kube::IsApiNotFound(client_->Get(crds, "", "nodegpustatuses.canhazgpu.dev").status()));
}

TEST_F(NvidiaSimClusterTest, APodOfNvidiasClassRunsWithItsGpuAndGivesItBack) {
  CreatePod(
      "infer", 1,
      "echo NVIDIA=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES; " + WaitForGate("infer"),
      "gpu.nvidia.com");
  ASSERT_TRUE(Eventually([&] { return Logs("infer").starts_with("NVIDIA="); }))
      << Pod("infer").dump() << ReadFile(Log());
  const json pod = Pod("infer");
  const std::string node = pod["spec"]["nodeName"];
  const std::string claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
  const json allocated = client_->Get(kube::kResourceClaims, "default", claim).value();
  const json& result = allocated["status"]["allocation"]["devices"]["results"][0];
  EXPECT_EQ(result["driver"], "gpu.nvidia.com");
  // The uuid its slice publishes for the allocated device.
  std::string uuid;
  absl::StatusOr<json> slices =
      client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=" + node});
  for (const json& s : (*slices)["items"]) {
    for (const json& d : s["spec"].value("devices", json::array())) {
      if (d["name"] == result["device"]) uuid = d["attributes"]["uuid"]["string"];
    }
  }
  ASSERT_FALSE(uuid.empty()) << allocated.dump();
  EXPECT_EQ(Logs("infer"), "NVIDIA=" + uuid + " CUDA=0\n");
  // The spec it prepared is valid by the official schema.
  std::vector<std::string> specs;
  for (const auto& entry : fs::directory_iterator(NodeDir(node) + "/cdi")) {
    specs.push_back(entry.path());
  }
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_THAT(specs[0], HasSubstr("k8s.gpu.nvidia.com"));
  EXPECT_EQ(CdiSchemaErrors(specs[0]), "");

  WriteFile(Gate("infer"), "");
  EXPECT_TRUE(Eventually([&] { return Phase("infer") == "Succeeded"; })) << Pod("infer").dump();
  EXPECT_TRUE(Eventually([&] { return fs::is_empty(NodeDir(node) + "/cdi"); }));
  // Deleting the pod takes its generated claim with it (the garbage
  // collector).
  ASSERT_TRUE(client_->Delete(kube::kPods, "default", "infer").ok());
  EXPECT_TRUE(Eventually([&] {
    return kube::IsApiNotFound(client_->Get(kube::kResourceClaims, "default", claim).status());
  }));
}

TEST_F(NvidiaSimClusterTest, EachContainerSeesOnlyTheDevicesOfTheRequestItNames) {
  CreatePodOfTwoRequests("pair", "gpu.nvidia.com");
  ExpectEachContainerSeesOnlyItsRequest("pair");
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
  CliResult bad_driver = run({"--dir", dir + "/c", "--driver", "amd"});
  EXPECT_EQ(bad_driver.exit_code, 2);
  EXPECT_EQ(bad_driver.err,
            "k8shazgpu-sim: --driver: unknown driver 'amd'; say canhazgpu or nvidia\n");
  CliResult gate = run({"--dir", dir + "/c", "--feature-gates", "DRAConsumableCapacity=true"});
  EXPECT_EQ(gate.exit_code, 2);
  EXPECT_EQ(gate.err,
            "k8shazgpu-sim: --feature-gates: unrecognized feature gate: DRAConsumableCapacity "
            "(the one simulated is GenericWorkload)\n");
  CliResult gate_value = run({"--dir", dir + "/c", "--feature-gates", "GenericWorkload=yes"});
  EXPECT_EQ(gate_value.exit_code, 2);
  EXPECT_EQ(gate_value.err,
            "k8shazgpu-sim: --feature-gates: invalid value of GenericWorkload: 'yes', expected "
            "true or false\n");
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
