// The fixture of the k8shazgpu-node end-to-end tests: the real binary
// against the simulated API server (k8shazgpu-sim apiserver) on a simulated
// host, driven by our kubelet client over its real unix sockets, beside the
// real canhazgpu.
#pragma once

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
#include "kubeletplugin/kubelet_client.h"
#include "kubesim/patch.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::testing {

class NodeDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/node_daemon_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_ = {{"CANHAZGPU_STATE", dir_ + "/state.db"}, {"HOME", dir_}};
    sim_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--kubeconfig-out", Kubeconfig()},
                           {}, Kubeconfig(), dir_ + "/sim.log");
    ASSERT_TRUE(std::filesystem::exists(Kubeconfig())) << ReadFile(dir_ + "/sim.log");
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
                           yaml::ToJson(text.str()).value())
            .ok());
    StartNode();
  }
  void TearDown() override {
    if (node_ > 0) {
      kill(node_, SIGTERM);
      EXPECT_EQ(ExitCodeOf(node_), 0) << ReadFile(dir_ + "/node.log");
    }
    // First our idle connection: the server's shutdown waits out each idle
    // connection's keep-alive (5 s) before it exits.
    client_.reset();
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    std::filesystem::remove_all(dir_);
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
    std::filesystem::remove(RegistrationSocket());  // a killed daemon's: wait for the new one's
    node_ = SpawnProgram({K8SHAZGPU_NODE_BINARY, "--node-name", "node-a", "--kubeconfig",
                          Kubeconfig(), "--plugin-dir", dir_ + "/plugin", "--cdi-dir",
                          dir_ + "/cdi", "--http-listen", "127.0.0.1:0"},
                         env, {.stderr_path = dir_ + "/node.log"});
    ASSERT_TRUE(Eventually([&] {
      return std::filesystem::exists(RegistrationSocket()) || ProcessGone(node_);
    })) << ReadFile(dir_ + "/node.log");
  }
  std::vector<std::string> Published() {
    std::vector<std::string> names;
    absl::StatusOr<nlohmann::json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=node-a"});
    if (!slices.ok()) return {"error: " + std::string(slices.status().message())};
    for (const nlohmann::json& s : (*slices)["items"]) {
      for (const nlohmann::json& d : s["spec"].value("devices", nlohmann::json::array()))
        names.push_back(d["name"]);
    }
    return names;
  }
  // The published device `name` of node-a, or null.
  nlohmann::json PublishedDevice(const std::string& name) {
    absl::StatusOr<nlohmann::json> slices =
        client_->ListAll(kube::kResourceSlices, "", {.field_selector = "spec.nodeName=node-a"});
    if (!slices.ok()) return nullptr;
    for (const nlohmann::json& s : (*slices)["items"]) {
      for (const nlohmann::json& d : s["spec"].value("devices", nlohmann::json::array())) {
        if (d["name"] == name) return d;
      }
    }
    return nullptr;
  }
  // The simulated host's GPU `index` changed by `change`, written as a
  // whole (rename) so that no reader sees half a file.
  void ChangeHostGpu(int index, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json host = nlohmann::json::parse(ReadFile(dir_ + "/host.json"));
    change(host["gpus"][index]);
    { std::ofstream(dir_ + "/host.json.new") << host.dump(2); }
    std::filesystem::rename(dir_ + "/host.json.new", dir_ + "/host.json");
  }
  // The CDI spec files in --cdi-dir.
  std::vector<std::string> CdiFiles() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/cdi", ec)) {
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
    const nlohmann::json document = nlohmann::json::parse(text);
    for (const auto& [uid, claim] : document["claims"].items()) states[uid] = claim["state"];
    return states;
  }
  // GPUs that canhazgpu on the node sees taken (by anyone, claims included).
  std::vector<int> TakenGpus() {
    CliResult status = RunProgram({CANHAZGPU_BINARY, "status", "--json"}, env_);
    std::vector<int> taken;
    for (const nlohmann::json& gpu : nlohmann::json::parse(status.out)) {
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
    std::filesystem::remove(Kubeconfig());
    sim_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--listen", "127.0.0.1:" + port,
                            "--kubeconfig-out", Kubeconfig()},
                           {}, Kubeconfig(), dir_ + "/sim2.log");
    ASSERT_TRUE(std::filesystem::exists(Kubeconfig())) << ReadFile(dir_ + "/sim2.log");
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
  nlohmann::json EventAbout(const std::string& kind, const std::string& name) {
    absl::StatusOr<nlohmann::json> events = client_->ListAll(kube::kEvents, "", {});
    if (!events.ok()) return nullptr;
    for (const nlohmann::json& e : (*events)["items"]) {
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

}  // namespace canhazgpu::testing
