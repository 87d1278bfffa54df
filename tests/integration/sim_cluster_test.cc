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

#include "daemon/kubelet_client.h"
#include "driver/cdi_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/deploy_manifests.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kubesim/patch.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class SimClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCluster({}); }
  // Two nodes of two GPUs, the first in MIG mode, or the nodes of
  // `cluster_file` (its text); `extra` flags added.
  void StartCluster(const std::vector<std::string>& extra, const std::string& cluster_file = "") {
    char tmpl[] = "/tmp/sim_cluster_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cluster_dir_ = dir_ + "/cluster";
    std::vector<std::string> args = {K8SHAZGPU_SIM_BINARY, "cluster",       "--dir",
                                     cluster_dir_,         "--node-binary", K8SHAZGPU_NODE_BINARY};
    if (cluster_file.empty()) {
      args.insert(args.end(), {"--nodes", "2", "--gpus-per-node", "2", "--mig-gpus", "1"});
    } else {
      std::ofstream(dir_ + "/cluster.yaml") << cluster_file;
      args.insert(args.end(), {"--cluster-file", dir_ + "/cluster.yaml"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    sim_ = SpawnUntilReady(args, {}, cluster_dir_ + "/ready", Log());
    ASSERT_TRUE(fs::exists(cluster_dir_ + "/ready")) << ReadFile(Log());
    kube::LoadOptions load;
    load.kubeconfig_flag = cluster_dir_ + "/kubeconfig";
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
  }
  void TearDown() override {
    // First our idle connection: the server's shutdown waits out each idle
    // connection's keep-alive (5 s) before it exits.
    client_.reset();
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    fs::remove_all(dir_);
  }

  std::string Log() const { return dir_ + "/sim.log"; }
  // The official CDI schema's verdict (tests/schema/validate_cdi_spec.py).
  static std::string CdiSchemaErrors(const std::string& spec) {
    CliResult r = RunProgram({"python3", std::string(TESTS_DIR) + "/schema/validate_cdi_spec.py",
                              std::string(TESTS_DIR) + "/fixtures/cdi", spec},
                             {});
    return r.exit_code == 0 ? "" : r.out + r.err;
  }
  std::string NodeDir(const std::string& node) const { return cluster_dir_ + "/nodes/" + node; }
  std::map<std::string, std::string> NodeEnv(const std::string& node) const {
    return {{"CANHAZGPU_STATE", NodeDir(node) + "/state.db"}, {"HOME", dir_}};
  }
  // A claim template for `count` GPUs of `device_class` and a pod using it
  // that runs `script` with sh, labelled with the canhazgpu user.
  void CreatePod(const std::string& name, int count, const std::string& script,
                 const std::string& device_class = "gpu.canhazgpu.dev") {
    const json template_object = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaimTemplate"},
        {"metadata", {{"name", name + "-gpus"}}},
        {"spec",
         {{"spec",
           {{"devices",
             {{"requests",
               {{{"name", "gpus"},
                 {"exactly", {{"deviceClassName", device_class}, {"count", count}}}}}}}}}}}}};
    ASSERT_TRUE(client_->CreateObject(kTemplates, "default", template_object).ok());
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"canhazgpu.dev/user", "alice"}}}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"resourceClaims", {{{"name", "gpus"}, {"resourceClaimTemplateName", name + "-gpus"}}}},
          {"containers",
           {{{"name", "main"},
             {"image", "ubuntu"},
             {"command", {"sh", "-c", script}},
             {"resources", {{"claims", {{{"name", "gpus"}}}}}}}}}}}};
    absl::StatusOr<json> created = client_->CreateObject(kube::kPods, "default", pod);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  // NVIDIA's gpu-test5 pattern: one claim of two requests, "first" and
  // "second" (one GPU each), and a container naming each, and a third
  // naming the whole claim. Each prints its GPU variables and device nodes.
  void CreatePodOfTwoRequests(const std::string& name, const std::string& device_class) {
    auto request = [&](const char* r) {
      return json{{"name", r}, {"exactly", {{"deviceClassName", device_class}, {"count", 1}}}};
    };
    ASSERT_TRUE(
        client_
            ->CreateObject(
                kTemplates, "default",
                {{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "ResourceClaimTemplate"},
                 {"metadata", {{"name", name + "-gpus"}}},
                 {"spec",
                  {{"spec",
                    {{"devices", {{"requests", {request("first"), request("second")}}}}}}}}})
            .ok());
    const std::string script =
        "echo CUDA=$CUDA_VISIBLE_DEVICES NVIDIA=$NVIDIA_VISIBLE_DEVICES "
        "NODES=$CANHAZGPU_SIM_DEVICE_NODES; " +
        WaitForGate(name);
    auto container = [&](const char* container_name, const char* request) {
      json claim = {{"name", "gpus"}};
      if (*request != '\0') claim["request"] = request;
      return json{{"name", container_name},
                  {"image", "ubuntu"},
                  {"command", {"sh", "-c", script}},
                  {"resources", {{"claims", {claim}}}}};
    };
    absl::StatusOr<json> created = client_->CreateObject(
        kube::kPods, "default",
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", {{"name", name}, {"labels", {{"canhazgpu.dev/user", "alice"}}}}},
         {"spec",
          {{"restartPolicy", "Never"},
           {"resourceClaims", {{{"name", "gpus"}, {"resourceClaimTemplateName", name + "-gpus"}}}},
           {"containers",
            {container("first", "first"), container("second", "second"),
             container("whole", "")}}}}});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  std::string ContainerLogs(const std::string& pod, const std::string& container) {
    return client_->Logs("default", pod, {.container = container}).value_or("");
  }
  // The device nodes in a line "... NODES=/dev/a,/dev/b".
  static std::set<std::string> NodesOf(const std::string& line) {
    const size_t at = line.find("NODES=");
    if (at == std::string::npos) return {};
    std::string list = line.substr(at + 6);
    if (!list.empty() && list.back() == '\n') list.pop_back();
    std::set<std::string> nodes;
    for (size_t start = 0; start <= list.size();) {
      const size_t comma = std::min(list.find(',', start), list.size());
      nodes.insert(list.substr(start, comma - start));
      start = comma + 1;
    }
    return nodes;
  }
  // Each request's device as the container must see it: "CUDA=0 NVIDIA=<uuid>
  // NODES=<its /dev/nvidiaN>,...", by the claim's allocation and the slices.
  void ExpectEachContainerSeesOnlyItsRequest(const std::string& pod_name) {
    for (const char* c : {"first", "second", "whole"}) {
      ASSERT_TRUE(Eventually([&] { return ContainerLogs(pod_name, c).starts_with("CUDA="); }))
          << c << " " << Pod(pod_name).dump() << ReadFile(Log());
    }
    const json pod = Pod(pod_name);
    const std::string node = pod["spec"]["nodeName"];
    const std::string claim = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
    const json allocated = client_->Get(kube::kResourceClaims, "default", claim).value();
    std::map<std::string, json> devices;  // by name, from the node's slices
    absl::StatusOr<json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=" + node});
    ASSERT_TRUE(slices.ok());
    for (const json& s : (*slices)["items"]) {
      for (const json& d : s["spec"].value("devices", json::array())) devices[d["name"]] = d;
    }
    std::vector<std::string> uuids, nodes;
    for (const json& result : allocated["status"]["allocation"]["devices"]["results"]) {
      const json& device = devices.at(result["device"].get<std::string>());
      const std::string uuid = device["attributes"]["uuid"]["string"];
      const std::string dev =
          "/dev/nvidia" + std::to_string(device["attributes"]["minor"]["int"].get<int>());
      const std::string container = result["request"];
      const std::string logs = ContainerLogs(pod_name, container);
      EXPECT_THAT(logs, ::testing::StartsWith("CUDA=0 NVIDIA=" + uuid + " NODES=")) << container;
      EXPECT_EQ(NodesOf(logs).count(dev), 1u) << container << ": " << logs;
      uuids.push_back(uuid);
      nodes.push_back(dev);
    }
    ASSERT_EQ(uuids.size(), 2u);
    // Neither sees the other's GPU, by any of its names.
    EXPECT_THAT(ContainerLogs(pod_name, "first"), Not(HasSubstr(uuids[1])));
    EXPECT_EQ(NodesOf(ContainerLogs(pod_name, "first")).count(nodes[1]), 0u);
    EXPECT_THAT(ContainerLogs(pod_name, "second"), Not(HasSubstr(uuids[0])));
    EXPECT_EQ(NodesOf(ContainerLogs(pod_name, "second")).count(nodes[0]), 0u);
    // The container naming the whole claim has both GPUs' device nodes.
    EXPECT_EQ(NodesOf(ContainerLogs(pod_name, "whole")).count(nodes[0]), 1u);
    EXPECT_EQ(NodesOf(ContainerLogs(pod_name, "whole")).count(nodes[1]), 1u);
    WriteFile(Gate(pod_name), "");
    EXPECT_TRUE(Eventually([&] { return Phase(pod_name) == "Succeeded"; })) << Pod(pod_name).dump();
  }

  json Pod(const std::string& name) {
    return client_->Get(kube::kPods, "default", name).value_or(json::object());
  }
  std::string Phase(const std::string& name) {
    return Pod(name).value("status", json::object()).value("phase", "");
  }
  std::string Logs(const std::string& name) { return client_->Logs("default", name).value_or(""); }
  // A file the pods' scripts wait for, so a test decides when they end.
  std::string Gate(const std::string& name) const { return dir_ + "/gate-" + name; }
  std::string WaitForGate(const std::string& name) const {
    return "while [ ! -e " + Gate(name) + " ]; do sleep 0.05; done";
  }

  const kube::ResourceRef kTemplates{"resource.k8s.io", "v1", "resourceclaimtemplates", true};

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
  daemon::KubeletClientOptions patient;
  patient.get_info_timeout = std::chrono::seconds(10);
  absl::StatusOr<std::unique_ptr<daemon::KubeletClient>> kubelet = daemon::KubeletClient::Register(
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
  EXPECT_EQ(Phase("train"), "Running");
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
          "NAME +NODE +FREE +HELD +PREPARED +AGE\nnode-0 +node-0 +[0-9]+ +0 +[0-9]+ +[0-9]+s"));
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

// What people apply runs: a Deployment, a DaemonSet and an Indexed Job
// whose pods each claim a GPU through a v1beta1 claim template (as
// NVIDIA's published examples still are), applied, awaited and read with
// the real kubectl as a user would.
TEST_F(SimClusterTest, KubectlAppliedWorkloadsGetPodsAndFinish) {
  if (std::string why = NoRecentKubectl("the simulated cluster's workload test does not run");
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  const std::string manifest = dir_ + "/workloads.yaml";
  std::ofstream(manifest) << R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: ubuntu, command: [sleep, "3600"]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      containers: [{name: main, image: ubuntu, command: [sleep, "3600"]}]
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests: [{name: gpu, deviceClassName: gpu.canhazgpu.dev}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers:
      - name: main
        image: ubuntu
        command: [sh, -c, 'echo "rank $JOB_COMPLETION_INDEX on $CUDA_VISIBLE_DEVICES"']
        resources: {claims: [{name: gpu}]}
)";
  const std::map<std::string, std::string> env = {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}};
  CliResult applied = RunProgram({"kubectl", "apply", "-f", manifest}, env);
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  CliResult rollout =
      RunProgram({"kubectl", "rollout", "status", "deployment/web", "--timeout=60s"}, env);
  EXPECT_EQ(rollout.exit_code, 0) << rollout.out << rollout.err;
  EXPECT_THAT(rollout.out, HasSubstr("deployment \"web\" successfully rolled out"));
  CliResult daemons =
      RunProgram({"kubectl", "rollout", "status", "daemonset/node-agent", "--timeout=60s"}, env);
  EXPECT_EQ(daemons.exit_code, 0) << daemons.out << daemons.err;
  CliResult done = RunProgram(
      {"kubectl", "wait", "--for=condition=complete", "job/train", "--timeout=60s"}, env);
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err << ReadFile(Log());

  CliResult tables = RunProgram({"kubectl", "get", "deployments,daemonsets,jobs"}, env);
  EXPECT_EQ(tables.exit_code, 0) << tables.err;
  EXPECT_THAT(tables.out, ::testing::ContainsRegex("web +2/2 +2 +2 +[0-9]+s"));
  EXPECT_THAT(tables.out, ::testing::ContainsRegex("node-agent +2 +2 +2 +2 +2 +<none> +[0-9]+s"));
  EXPECT_THAT(tables.out, ::testing::ContainsRegex("train +Complete +2/2 +[0-9]+s +[0-9]+s"));

  // kubectl scale goes through the scale subresource; the server checks
  // the count as a real one does.
  CliResult scaled = RunProgram({"kubectl", "scale", "deployment/web", "--replicas=3"}, env);
  EXPECT_EQ(scaled.exit_code, 0) << scaled.err;
  CliResult rescaled =
      RunProgram({"kubectl", "rollout", "status", "deployment/web", "--timeout=60s"}, env);
  EXPECT_EQ(rescaled.exit_code, 0) << rescaled.out << rescaled.err;
  EXPECT_THAT(RunProgram({"kubectl", "get", "deployment", "web"}, env).out,
              ::testing::ContainsRegex("web +3/3 +3 +3 "));
  CliResult negative = RunProgram({"kubectl", "patch", "deployment", "web", "--subresource=scale",
                                   "--type=merge", "-p", R"({"spec":{"replicas":-1}})"},
                                  env);
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_THAT(negative.err, HasSubstr("spec.replicas: Invalid value: -1: must be greater than or "
                                      "equal to 0"));

  // Each index ran once, on a GPU of its own.
  absl::StatusOr<json> pods = client_->List(
      kube::kPods, "default", {.label_selector = "batch.kubernetes.io/job-name=train"});
  ASSERT_TRUE(pods.ok()) << pods.status();
  std::set<std::string> lines;
  for (const json& pod : (*pods)["items"]) lines.insert(Logs(pod["metadata"]["name"]));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(*lines.begin(), ::testing::MatchesRegex("rank 0 on [0-9]\n"));
  EXPECT_THAT(*lines.rbegin(), ::testing::MatchesRegex("rank 1 on [0-9]\n"));

  // Deleting the Deployment takes its ReplicaSet and pods with it.
  CliResult deleted =
      RunProgram({"kubectl", "delete", "deployment", "web", "--wait=true", "--timeout=60s"}, env);
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<json> left =
        client_->List(kube::kPods, "default", {.label_selector = "app=web"});
    return left.ok() && (*left)["items"].empty();
  }));
}

// kubectl exec runs a command where the pod runs, in its container's
// environment (its GPUs included), and exits with the command's code.
TEST_F(SimClusterTest, KubectlExecRunsInThePodsContainer) {
  if (std::string why = NoRecentKubectl("the simulated cluster's exec test does not run");
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  CreatePod("shell", 1, WaitForGate("shell"));
  ASSERT_TRUE(Eventually([&] { return Phase("shell") == "Running"; })) << Pod("shell").dump();
  const std::map<std::string, std::string> env = {{"KUBECONFIG", cluster_dir_ + "/kubeconfig"}};
  CliResult ran = RunProgram({"kubectl", "exec", "shell", "--", "sh", "-c",
                              "echo gpus=$CUDA_VISIBLE_DEVICES; echo to-stderr >&2; exit 3"},
                             env);
  EXPECT_EQ(ran.exit_code, 3) << ran.err;
  EXPECT_THAT(ran.out, ::testing::MatchesRegex("gpus=[0-9]\n"));
  EXPECT_THAT(ran.err, HasSubstr("to-stderr\n"));
  EXPECT_THAT(ran.err, HasSubstr("command terminated with exit code 3"));
  CliResult ok = RunProgram({"kubectl", "exec", "shell", "--", "true"}, env);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  CliResult no_container =
      RunProgram({"kubectl", "exec", "shell", "-c", "nope", "--", "true"}, env);
  EXPECT_NE(no_container.exit_code, 0);
  EXPECT_THAT(no_container.err, HasSubstr("container nope is not valid for pod shell"));
  CliResult missing = RunProgram({"kubectl", "exec", "shell", "--", "/no/such/program"}, env);
  EXPECT_EQ(missing.exit_code, 127);
  // -i: the command reads what kubectl reads.
  CliResult piped = RunProgram(
      {"sh", "-c",
       "printf 'echo from-stdin $CUDA_VISIBLE_DEVICES\\nexit 5\\n' | kubectl exec -i shell -- sh"},
      env);
  EXPECT_EQ(piped.exit_code, 5) << piped.err;
  EXPECT_THAT(piped.out, ::testing::MatchesRegex("from-stdin [0-9]\n"));
  // -it, as `k8shazgpu reserve` prints it: a shell on a terminal (script(1)
  // gives kubectl the terminal a user's would be).
  if (RunProgram({"sh", "-c", "command -v script"}, {}).exit_code == 0) {
    std::ofstream(dir_ + "/typed") << "echo on-a-tty $(tty)\nexit 6\n";
    CliResult shell = RunProgram(
        {"sh", "-c", "script -qec 'kubectl exec -it shell -- sh' /dev/null < " + dir_ + "/typed"},
        env);
    EXPECT_EQ(shell.exit_code, 6) << shell.out << shell.err;
    EXPECT_THAT(shell.out, ::testing::ContainsRegex("on-a-tty /dev/pts/[0-9]+"));
  } else {
    std::cerr << "script(1) is missing: kubectl exec -it is not tested\n";
  }
  std::ofstream(Gate("shell"));
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
      kubesim::YamlDocumentsToJson(ReadFile(std::string(DEPLOY_DIR) + "/examples/gpu-pod.yaml"));
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

// A heterogeneous cluster, like the DRA articles': A100s with one split
// into MIG instances on one node, T4s on another.
constexpr char kArticlesCluster[] = R"(nodes:
- model: A100-80GB
  gpus: 4
  mig:
  - gpu: 0
    profiles: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]
- model: T4-16GB
  gpus: 2
)";

class ClusterFileSimClusterTest : public SimClusterTest {
 protected:
  void SetUp() override { StartCluster({}, kArticlesCluster); }
};

TEST_F(ClusterFileSimClusterTest, NodesHaveTheirModelsAndMigLayoutsAndPodsFindThem) {
  absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
  ASSERT_TRUE(slices.ok());
  std::map<std::string, std::string> products;  // "node/device" -> product
  std::map<std::string, std::string> memory;
  for (const json& slice : (*slices)["items"]) {
    for (const json& d : slice["spec"].value("devices", json::array())) {
      const std::string key =
          slice["spec"]["nodeName"].get<std::string>() + "/" + d["name"].get<std::string>();
      products[key] = d["attributes"]["productName"]["string"];
      memory[key] = d["capacity"]["memory"]["value"];
    }
  }
  EXPECT_EQ(products["node-0/gpu-1"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(memory["node-0/gpu-1"], "80Gi");
  EXPECT_EQ(products["node-1/gpu-0"], "Tesla T4");
  EXPECT_EQ(memory["node-1/gpu-0"], "15Gi");
  // The four instances, at placements that fit the eight memory slices.
  EXPECT_EQ(memory["node-0/gpu-0-mig-3g40gb-9-4"], "40192Mi");
  EXPECT_EQ(memory["node-0/gpu-0-mig-2g20gb-14-0"], "19968Mi");
  EXPECT_EQ(memory["node-0/gpu-0-mig-1g10gb-19-2"], "9856Mi");
  EXPECT_EQ(memory["node-0/gpu-0-mig-1g10gb-19-3"], "9856Mi");
  EXPECT_EQ(products.size(), 4u + 4u + 2u) << "whole GPUs and MIG instances";

  // Pods that ask for a T4 and for a 3g.40gb instance land where they are.
  const std::string manifest = dir_ + "/pods.yaml";
  std::ofstream(manifest) << R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: t4}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.canhazgpu.dev
        selectors: [{cel: {expression: 'device.attributes["gpu.canhazgpu.dev"].productName == "Tesla T4"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: half-a100}
spec:
  devices:
    requests:
    - name: mig
      exactly:
        deviceClassName: mig.canhazgpu.dev
        selectors: [{cel: {expression: 'device.attributes["gpu.canhazgpu.dev"].profile == "3g.40gb"'}}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-t4}
spec:
  restartPolicy: Never
  resourceClaims: [{name: gpu, resourceClaimName: t4}]
  containers: [{name: main, image: ubuntu, command: [sh, -c, 'echo $CUDA_VISIBLE_DEVICES'],
                resources: {claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-mig}
spec:
  restartPolicy: Never
  resourceClaims: [{name: mig, resourceClaimName: half-a100}]
  containers: [{name: main, image: ubuntu, command: [sh, -c, 'echo $CUDA_VISIBLE_DEVICES'],
                resources: {claims: [{name: mig}]}}]
)";
  auto created = kubesim::YamlDocumentsToJson(ReadFile(manifest));
  ASSERT_TRUE(created.ok()) << created.status();
  for (const json& object : *created) {
    const kube::ResourceRef& ref = object["kind"] == "Pod" ? kube::kPods : kube::kResourceClaims;
    ASSERT_TRUE(client_->CreateObject(ref, "default", object).ok()) << object.dump();
  }
  EXPECT_TRUE(Eventually([&] { return Phase("on-t4") == "Succeeded"; })) << Pod("on-t4").dump();
  EXPECT_TRUE(Eventually([&] { return Phase("on-mig") == "Succeeded"; })) << Pod("on-mig").dump();
  EXPECT_EQ(Pod("on-t4")["spec"]["nodeName"], "node-1");
  EXPECT_EQ(Pod("on-mig")["spec"]["nodeName"], "node-0");
  EXPECT_THAT(Logs("on-mig"), ::testing::StartsWith("MIG-"));
}

TEST(SimClusterFileTest, ABadClusterFileIsAOneLineUsageErrorAndStartsNothing) {
  char tmpl[] = "/tmp/sim_cluster_file_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::pair<const char*, const char*> kCases[] = {
      {"nodes:\n- model: B200\n", "unknown GPU model \"B200\" (known: H100-80GB, A100-80GB"},
      {"nodes:\n- model: T4-16GB\n  mig: [{gpu: 0, profiles: [1g.5gb]}]\n",
       "nodes[0]: GPU 0: T4-16GB does not support MIG"},
      {"nodes:\n- model: A100-40GB\n  gpus: 1\n  mig: [{gpu: 0, profiles: [4g.20gb, 4g.20gb]}]\n",
       "4g.20gb + 4g.20gb does not fit on one A100-40GB's eight memory slices"},
      {"nodes:\n- model: A100-80GB\n  mig: [{gpu: 0, profiles: [1g.5gb]}]\n",
       "no MIG profile \"1g.5gb\" on A100-80GB (it has 1g.10gb, 1g.20gb"},
      {"nodes:\n- gpus: 40\n", "nodes[0].gpus: must be a whole number from 1 to 16"},
      {"nodes:\n- gpus: 2\n  mig: [{gpu: 2, profiles: [1g.10gb]}]\n",
       "nodes[0].mig[0].gpu: must be a whole number from 0 to 1"},
      {"nodes:\n- gpus: 2\n  colour: red\n", "nodes[0].colour: unknown field"},
      {"nodes: []\n", "nodes: must be a non-empty list"},
  };
  for (const auto& [text, message] : kCases) {
    std::ofstream(dir + "/cluster.yaml") << text;
    CliResult r = RunProgram({K8SHAZGPU_SIM_BINARY, "cluster", "--dir", dir + "/cluster",
                              "--cluster-file", dir + "/cluster.yaml"},
                             {});
    EXPECT_EQ(r.exit_code, 2) << text;
    EXPECT_THAT(r.err, HasSubstr(message)) << text;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/cluster")) << "nothing started for " << text;
  }
  CliResult both = RunProgram({K8SHAZGPU_SIM_BINARY, "cluster", "--dir", dir + "/cluster",
                               "--cluster-file", dir + "/cluster.yaml", "--nodes", "3"},
                              {});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--nodes and --cluster-file cannot be used together"));
  fs::remove_all(dir);
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
