// The fixture of the `k8shazgpu-sim cluster` end-to-end tests: the real
// binary with the real k8shazgpu-node on every node, a client of its API
// server, and the helpers the tests share (sim_cluster_test.cc,
// sim_cluster_workloads_test.cc).
#pragma once

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::testing {

class SimClusterTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;
  void SetUp() override { StartCluster({}); }
  // Two nodes of two GPUs, the first in MIG mode, or the nodes of
  // `cluster_file` (its text); `extra` flags added.
  void StartCluster(const std::vector<std::string>& extra, const std::string& cluster_file = "") {
    if (dir_.empty()) MakeDir();
    cluster_dir_ = dir_ + "/cluster";
    std::vector<std::string> args = {K8SHAZGPU_SIM_BINARY, "cluster",       "--dir",
                                     cluster_dir_,         "--node-binary", node_binary_};
    if (cluster_file.empty()) {
      args.insert(args.end(), {"--nodes", "2", "--gpus-per-node", "2", "--mig-gpus", "1"});
    } else {
      std::ofstream(dir_ + "/cluster.yaml") << cluster_file;
      args.insert(args.end(), {"--cluster-file", dir_ + "/cluster.yaml"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    sim_ = SpawnUntilReady(args, {}, cluster_dir_ + "/ready", Log());
    ASSERT_TRUE(std::filesystem::exists(cluster_dir_ + "/ready")) << ReadFile(Log());
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
    std::filesystem::remove_all(dir_);
  }

  // The test's scratch directory, made by StartCluster if not before.
  void MakeDir() {
    char tmpl[] = "/tmp/sim_cluster_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
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
    EXPECT_THAT(ContainerLogs(pod_name, "first"), ::testing::Not(::testing::HasSubstr(uuids[1])));
    EXPECT_EQ(NodesOf(ContainerLogs(pod_name, "first")).count(nodes[1]), 0u);
    EXPECT_THAT(ContainerLogs(pod_name, "second"), ::testing::Not(::testing::HasSubstr(uuids[0])));
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
  std::string node_binary_ = K8SHAZGPU_NODE_BINARY;  // what every node's daemon runs
  int sim_ = 0;
  std::unique_ptr<kube::Client> client_;
};

}  // namespace canhazgpu::testing
