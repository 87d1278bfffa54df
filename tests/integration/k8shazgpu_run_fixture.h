// The fixture of the k8shazgpu run end-to-end tests: the real binaries
// against a real simulated cluster (k8shazgpu-sim cluster, with
// k8shazgpu-node on every node), started in a fresh directory per test.
#pragma once

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::testing {

const kube::ResourceRef kTemplates = kube::kResourceClaimTemplates;

class K8shazgpuRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/k8shazgpu_run_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cluster_dir_ = dir_ + "/cluster";
    // Where k8shazgpu runs: `run` ships its working directory (empty
    // unless a test writes there), never the test's own.
    project_ = dir_ + "/project";
    std::filesystem::create_directories(project_);
  }
  // A cluster of `nodes` x `gpus`, the first `mig` GPUs of each in MIG mode.
  // `driver` "nvidia": NVIDIA's classes and slices (k8shazgpu-sim --driver).
  // `extra`: more k8shazgpu-sim cluster flags.
  void StartCluster(int nodes, int gpus, int mig = 0, const std::string& driver = "canhazgpu",
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {K8SHAZGPU_SIM_BINARY,
                                     "cluster",
                                     "--dir",
                                     cluster_dir_,
                                     "--nodes",
                                     std::to_string(nodes),
                                     "--gpus-per-node",
                                     std::to_string(gpus),
                                     "--mig-gpus",
                                     std::to_string(mig),
                                     "--driver",
                                     driver,
                                     "--node-binary",
                                     K8SHAZGPU_NODE_BINARY,
                                     "--cli-binary",
                                     K8SHAZGPU_BINARY};
    argv.insert(argv.end(), extra.begin(), extra.end());
    sim_ = SpawnUntilReady(argv, {}, cluster_dir_ + "/ready", dir_ + "/sim.log");
    ASSERT_TRUE(std::filesystem::exists(cluster_dir_ + "/ready")) << ReadFile(dir_ + "/sim.log");
    kube::LoadOptions load;
    load.kubeconfig_flag = Kubeconfig();
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
    // Every node has published its GPUs: a run never waits for a slice.
    ASSERT_TRUE(Eventually([&] {
      absl::StatusOr<nlohmann::json> slices = client_->ListAll(kube::kResourceSlices, "");
      std::set<std::string> published;
      for (const nlohmann::json& s : slices.ok() ? (*slices)["items"] : nlohmann::json::array()) {
        published.insert(s["spec"].value("nodeName", ""));
      }
      return static_cast<int>(published.size()) == nodes;
    }));
    // ... and its kubelet has registered the driver.
    ASSERT_TRUE(Eventually([&] {
      const std::string log = ReadFile(dir_ + "/sim.log");
      int registered = 0;
      for (size_t at = 0; (at = log.find("registered DRA driver", at)) != std::string::npos; ++at) {
        ++registered;
      }
      return registered >= nodes;
    })) << ReadFile(dir_ + "/sim.log");
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

  std::string Kubeconfig() const { return cluster_dir_ + "/kubeconfig"; }
  std::map<std::string, std::string> Env() const {
    return {{"KUBECONFIG", Kubeconfig()}, {"HOME", dir_}};
  }
  // k8shazgpu with `args` in project_, bounded so that a hang fails the
  // test.
  CliResult K8s(std::vector<std::string> args) {
    args.insert(args.begin(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", project_, "timeout", "120",
                               K8SHAZGPU_BINARY});
    return RunProgram(args, Env());
  }
  // Started in the background in project_, stdout and stderr into files.
  int SpawnK8s(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "sh", "-c", "cd " + project_ + " && exec \"$0\" \"$@\" > " + Out(name), K8SHAZGPU_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return SpawnProgram(argv, Env(), {.stderr_path = Err(name)});
  }
  std::string Out(const std::string& name) const { return dir_ + "/" + name + ".out"; }
  std::string Err(const std::string& name) const { return dir_ + "/" + name + ".err"; }

  nlohmann::json Pod(const std::string& name, const std::string& ns = "default") {
    return client_->Get(kube::kPods, ns, name).value_or(nlohmann::json::object());
  }
  std::string Phase(const std::string& name) {
    return Pod(name).value("/status/phase"_json_pointer, std::string());
  }
  // The names of the objects of `ref` that carry a run label.
  std::vector<std::string> Labelled(const kube::ResourceRef& ref, const std::string& ns = "") {
    std::vector<std::string> names;
    absl::StatusOr<nlohmann::json> list =
        client_->ListAll(ref, ns, {.label_selector = "canhazgpu.dev/run"});
    if (!list.ok()) return {"error: " + std::string(list.status().message())};
    for (const nlohmann::json& o : (*list)["items"]) names.push_back(o["metadata"]["name"]);
    return names;
  }
  std::vector<std::string> AllPods() {
    // Kept in a variable: a range-for over a temporary's member dangles.
    const nlohmann::json pods = client_->ListAll(kube::kPods, "").value();
    std::vector<std::string> names;
    for (const nlohmann::json& o : pods["items"]) names.push_back(o["metadata"]["name"]);
    return names;
  }
  // The UUID of GPU `index` of `node` as its fake host has it.
  std::string Uuid(const std::string& node, int index) {
    const nlohmann::json host =
        nlohmann::json::parse(ReadFile(cluster_dir_ + "/nodes/" + node + "/fake-host.json"));
    return host["gpus"][index]["uuid"];
  }
  // The devices pod `name`'s container was given ("gpu-0"), from the
  // kubelet's allocatedResourcesStatus (the claim is freed once it ends).
  std::vector<std::string> Devices(const std::string& name) {
    std::vector<std::string> out;
    const nlohmann::json pod = Pod(name);
    for (const nlohmann::json& s :
         pod.value("/status/containerStatuses/0/allocatedResourcesStatus"_json_pointer,
                   nlohmann::json::array())) {
      for (const nlohmann::json& r : s.value("resources", nlohmann::json::array())) {
        const std::string id = r.value("resourceID", "");
        out.push_back(id.substr(id.rfind('/') + 1));
      }
    }
    return out;
  }
  // A canhazgpu user on `node` takes its GPUs: the node driver withdraws
  // them from the slice, so runs wait in line (and are not refused as
  // never satisfiable: the node's NodeGpuStatus still names them).
  void HoldLocally(const std::string& node, int gpus = 1) {
    CliResult held = RunProgram(
        {CANHAZGPU_BINARY, "reserve", "--gpus", std::to_string(gpus), "--note", "local user"},
        {{"CANHAZGPU_STATE", cluster_dir_ + "/nodes/" + node + "/state.db"}, {"HOME", dir_}});
    ASSERT_EQ(held.exit_code, 0) << held.err;
    // Its NodeGpuStatus (written at most once a second) says so: until
    // then a node without devices looks like one that never has any.
    int total = 0;
    ASSERT_TRUE(Eventually([&] {
      const nlohmann::json status =
          client_->Get(kube::kNodeGpuStatuses, "", node).value_or(nlohmann::json());
      total = status.value("/status/summary/total"_json_pointer, 0);
      return status.value("/status/summary/held"_json_pointer, 0) == gpus;
    }));
    // ... and its slice no longer offers them: until then the scheduler may
    // still place a claim on a GPU the node will refuse to prepare.
    ASSERT_TRUE(Eventually([&] {
      absl::StatusOr<nlohmann::json> slices = client_->ListAll(kube::kResourceSlices, "");
      if (!slices.ok()) return false;
      int offered = 0;
      for (const nlohmann::json& s : (*slices)["items"]) {
        if (s["spec"].value("nodeName", "") != node) continue;
        offered += static_cast<int>(s["spec"].value("devices", nlohmann::json::array()).size());
      }
      return offered == total - gpus;
    }));
  }
  std::string Gate(const std::string& name) const { return dir_ + "/gate-" + name; }
  std::string WaitForGate(const std::string& name) const {
    return "while [ ! -e " + Gate(name) + " ]; do sleep 0.05; done";
  }

  std::string dir_;
  std::string cluster_dir_;
  std::string project_;
  int sim_ = 0;
  std::unique_ptr<kube::Client> client_;
};

}  // namespace canhazgpu::testing
