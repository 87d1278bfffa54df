// k8shazgpu vllm run from a vLLM checkout, end to end on the simulated
// cluster: the real CLI packages a checkout holding every kind of change,
// the nodes' cache agents warm the merge-base image (the CRI emulator), the
// repository mirror (libgit2 over file://) and the served model (the fake
// Hub), the pod is pinned where they are Ready, its init container - the
// real `k8shazgpu vllm unpack` - rebuilds the work tree in the pod's
// workspace from the node's mirror, and the main container overlays it and
// serves with HF_HUB_OFFLINE=1 from the node's model cache.
#include <signal.h>

#include <filesystem>
#include <sstream>

#include "absl/strings/str_split.h"
#include "changeset/testing/git_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hfcache/testing/fake_hub.h"
#include "integration/cli_runner.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace cs = ::canhazgpu::changeset::testing;
namespace fs = std::filesystem;

const std::string kModelConfig = R"({"model_type": "tiny"})";

class K8shazgpuVllmRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/k8shazgpu_vllm_run_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    MakeCheckout();
    hub_ = std::make_unique<hfcache::testing::FakeHub>("");
    ASSERT_TRUE(hub_->AddModel({.repo_id = "org/tiny",
                                .commit = std::string(40, 'd'),
                                .files = {{.path = "config.json", .content = kModelConfig},
                                          {.path = "model.safetensors",
                                           .content = std::string(300'000, '\xab'),
                                           .lfs = true}}})
                    .ok());
    ASSERT_TRUE(hub_->Start(0).ok());
  }
  void TearDown() override {
    // First our idle connection: the server's shutdown waits out each idle
    // connection's keep-alive (5 s) before it exits.
    client_.reset();
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    if (hub_) hub_->Stop();
    fs::remove_all(dir_);
  }

  // A vLLM checkout whose upstream is a plain local path, which the nodes
  // reach as file:// (issue 33: `vllm run` refused the path), with every kind of change: an
  // unpushed commit, a staged-only edit, an unstaged one, lines starting with "# ", a rename, a
  // deletion, a mode change, untracked text and binary files, an ignored file, and a CUDA source.
  void MakeCheckout() {
    vllm_ = cs::MakeFakeVllm(dir_, "upstream",
                             {{"vllm/a.py", "a = 1\n"},
                              {"vllm/b.py", "b = 1\n"},
                              {"vllm/old_name.py", "# old\nx = 1\n"},
                              {"vllm/tool.sh", "#!/bin/sh\necho tool\n"},
                              {"vllm/staged.py", "s = 0\n"},
                              {".gitignore", "*.log\n"}});
    base_ = cs::GitLine(vllm_.work, "rev-parse HEAD");
    cs::Git(vllm_.work, "checkout -q -b feature");
    cs::WriteBytes(vllm_.work / "vllm/a.py", "# column-0 comment\na = 2\n");
    cs::Git(vllm_.work, "commit -q -am unpushed");
    cs::WriteBytes(vllm_.work / "vllm/staged.py", "s = 1\n");
    cs::Git(vllm_.work, "add vllm/staged.py");
    cs::WriteBytes(vllm_.work / "vllm/__init__.py", "__version__ = \"0.0.0\"\n# unstaged\n");
    cs::Git(vllm_.work, "rm -q vllm/b.py");
    cs::Git(vllm_.work, "mv vllm/old_name.py vllm/new_name.py");
    fs::permissions(vllm_.work / "vllm/tool.sh",
                    fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    cs::WriteBytes(vllm_.work / "vllm/new/c.py", "# New file: c\n# \nc = 3\n");
    cs::WriteBytes(vllm_.work / "vllm/data.bin", std::string("\0\xff\x01\n# x\0", 7));
    cs::WriteBytes(vllm_.work / "vllm/debug.log", "ignored\n");
    cs::WriteBytes(vllm_.work / "csrc/k.cu", "__global__ void k() {}\n");

    // The image's installed vLLM, and a `vllm` that serves by printing
    // what it sees.
    cs::WriteBytes(dir_ / "site/vllm/__init__.py", "installed\n");
    cs::WriteBytes(dir_ / "site/vllm/_C.abi3.so", "compiled\n");
    cs::WriteBytes(dir_ / "bin/vllm",
                   "#!/bin/sh\n"
                   "echo \"serving $2 offline=$HF_HUB_OFFLINE\"\n"
                   "cat \"$HF_HUB_CACHE\"/models--org--tiny/snapshots/*/config.json; echo\n"
                   "python3 -c 'import vllm, os; print(open(os.path.join(os.path.dirname("
                   "vllm.__file__), \"a.py\")).read(), end=\"\")'\n",
                   0755);
  }

  void StartCluster(const std::vector<std::string>& images) {
    const std::string cluster = (dir_ / "cluster").string();
    std::vector<std::string> argv = {K8SHAZGPU_SIM_BINARY,
                                     "cluster",
                                     "--dir",
                                     cluster,
                                     "--nodes",
                                     "2",
                                     "--gpus-per-node",
                                     "1",
                                     "--node-binary",
                                     K8SHAZGPU_NODE_BINARY,
                                     "--cli-binary",
                                     K8SHAZGPU_BINARY,
                                     "--hf-endpoint",
                                     "http://127.0.0.1:" + std::to_string(hub_->port())};
    for (const std::string& image : images) argv.insert(argv.end(), {"--image", image});
    sim_ = SpawnUntilReady(argv, {}, cluster + "/ready", (dir_ / "sim.log").string());
    ASSERT_TRUE(fs::exists(cluster + "/ready")) << ReadFile((dir_ / "sim.log").string());
    kube::LoadOptions load;
    load.kubeconfig_flag = Kubeconfig();
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
    ASSERT_TRUE(Eventually([&] {
      const std::string log = ReadFile((dir_ / "sim.log").string());
      int registered = 0;
      for (size_t at = 0; (at = log.find("registered DRA driver", at)) != std::string::npos; ++at) {
        ++registered;
      }
      return registered >= 2;
    })) << ReadFile((dir_ / "sim.log").string());
  }

  std::string Kubeconfig() const { return (dir_ / "cluster/kubeconfig").string(); }

  // `k8shazgpu vllm run ARGS` from inside the checkout (vllm/new).
  CliResult VllmRun(std::vector<std::string> args,
                    const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> argv = {
        "sh",      "-c",  "cd \"$0\" && exec \"$@\"", (vllm_.work / "vllm/new").string(),
        "timeout", "120", K8SHAZGPU_BINARY,           "vllm",
        "run"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> all = {
        {"KUBECONFIG", Kubeconfig()},
        {"HOME", dir_.string()},
        {"K8SHAZGPU_VLLM_IMAGE_TEMPLATE", "registry.local/vllm:{commit}"}};
    for (const auto& [k, v] : env) all[k] = v;
    return RunProgram(argv, all);
  }
  std::vector<std::string> ServeArgs(const std::string& name) {
    return {"--keep",
            "--name",
            name,
            "--env",
            "PYTHONPATH=" + (dir_ / "site").string(),
            "--env",
            "PATH=" + (dir_ / "bin").string() + ":/usr/bin:/bin",
            "--",
            "vllm",
            "serve",
            "org/tiny"};
  }

  json Get(const kube::ResourceRef& ref, const std::string& name) {
    return client_->Get(ref, "default", name).value_or(json::object());
  }

  // The pod's workspace emptyDir as the simulated kubelet made it.
  fs::path Workspace(const std::string& node, const std::string& pod) {
    for (const fs::directory_entry& e :
         fs::directory_iterator(dir_ / "cluster/nodes" / node / "pods")) {
      if (e.path().filename().string().starts_with("default_" + pod + "_")) {
        return e.path() / "volumes" / "workspace" / "tree";
      }
    }
    return {};
  }

  fs::path dir_;
  cs::FakeVllm vllm_;
  std::string base_;
  std::unique_ptr<hfcache::testing::FakeHub> hub_;
  int sim_ = 0;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(K8shazgpuVllmRunTest, RunsTheWorkTreeOnANodeWithWarmCaches) {
  StartCluster({"registry.local/vllm:" + base_});
  CliResult run = VllmRun(ServeArgs("dev"));
  ASSERT_EQ(run.exit_code, 0) << run.err << ReadFile((dir_ / "sim.log").string());

  // What the developer is told: the checkout, what joined the plan, the
  // compiled-code warning, the wait.
  EXPECT_THAT(run.err, HasSubstr("merge-base " + base_.substr(0, 12) + " with upstream"));
  EXPECT_THAT(run.err, HasSubstr("added image vllm-" + base_ + ", gitRepo vllm-project-vllm-" +
                                 base_.substr(0, 12) + ", hfModel org-tiny to cache plan default"));
  EXPECT_THAT(run.err, HasSubstr("compiled code changed (csrc/k.cu)"));
  // It goes on once a node has every item, pinned to the nodes that have
  // them then: both, or the first one done when the other lags (a loaded
  // machine).
  const size_t ready_at = run.err.find("caches ready on ");
  ASSERT_NE(ready_at, std::string::npos) << run.err;
  const std::string ready_line =
      run.err.substr(ready_at + 16, run.err.find('\n', ready_at) - ready_at - 16);
  const std::vector<std::string> ready_nodes = absl::StrSplit(ready_line, ", ");
  EXPECT_THAT(ready_line, ::testing::AnyOf("node-0, node-1", "node-0", "node-1"));
  // What the pod did: the model from the node's cache, offline, and the
  // developer's a.py in the installed package; the warning in its log.
  EXPECT_THAT(run.out, HasSubstr("serving org/tiny offline=1\n" + kModelConfig +
                                 "\n# column-0 comment\na = 2\n"));
  EXPECT_THAT(run.out, HasSubstr("k8shazgpu: warning: compiled code changed (csrc/k.cu)"));

  const json pod = Get(kube::kPods, "dev");
  EXPECT_EQ(pod["status"]["phase"], "Succeeded");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "registry.local/vllm:" + base_);
  EXPECT_EQ(pod.value("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                      "nodeSelectorTerms/0/matchFields/0/values"_json_pointer,
                      json()),
            json(ready_nodes));
  const json changes = Get(kube::kConfigMaps, "dev-changes-0");
  EXPECT_EQ(changes.value("/metadata/ownerReferences/0/uid"_json_pointer, std::string()),
            pod["metadata"]["uid"]);

  // The workspace is the work tree, byte for byte (ignored files aside).
  const fs::path workspace = Workspace(pod["spec"]["nodeName"], "dev");
  ASSERT_FALSE(workspace.empty());
  EXPECT_EQ(cs::Snapshot(workspace), cs::Snapshot(vllm_.work, {"vllm/debug.log"}));
  EXPECT_EQ(cs::ReadBytes(dir_ / "site/vllm/new_name.py"), "# old\nx = 1\n");
  EXPECT_EQ(cs::ReadBytes(dir_ / "site/vllm/_C.abi3.so"), "compiled\n");
  EXPECT_EQ(cs::ReadBytes(dir_ / "site/vllm/data.bin"), std::string("\0\xff\x01\n# x\0", 7));
}

TEST_F(K8shazgpuVllmRunTest, AnImageNoNodeCanPullFallsBackToTheDefaultWithAWarning) {
  StartCluster({});  // the registry lacks the merge-base's image
  CliResult run = VllmRun(ServeArgs("fallback"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("warning: no node can pull the image:\nk8shazgpu:   "
                                 "registry.local/vllm:" +
                                 base_ + "\n"));
  EXPECT_THAT(run.err, HasSubstr("running vllm/vllm-openai:latest instead"));
  // Issue 33: the image once, the warning's lines within 100 columns.
  const std::string image = "registry.local/vllm:" + base_;
  size_t mentions = 0;
  std::stringstream lines(run.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("pull") == std::string::npos && line.find("instead") == std::string::npos &&
        !line.starts_with("k8shazgpu:   "))
      continue;
    EXPECT_LE(line.size(), 102u) << line;  // "…" is 3 bytes, one column
    for (size_t at = line.find(image); at != std::string::npos; at = line.find(image, at + 1))
      ++mentions;
  }
  EXPECT_EQ(mentions, 1u) << run.err;
  EXPECT_EQ(Get(kube::kPods, "fallback")["spec"]["containers"][0]["image"],
            "vllm/vllm-openai:latest");
  EXPECT_THAT(run.out, HasSubstr("serving org/tiny offline=1"));
}

TEST_F(K8shazgpuVllmRunTest, AModelNoNodeCanFetchStopsTheRunWithItsReason) {
  StartCluster({"registry.local/vllm:" + base_});
  std::vector<std::string> args = ServeArgs("nomodel");
  args.back() = "org/missing";
  CliResult run = VllmRun(args);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr("cache item org-missing failed on every node"));
  EXPECT_THAT(run.err, HasSubstr("k8shazgpu cache update org-missing"));
  // Nothing was created for the run.
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "nomodel").status()));
  EXPECT_TRUE(kube::IsApiNotFound(
      client_->Get(kube::kConfigMaps, "default", "nomodel-changes-0").status()));
}

}  // namespace
}  // namespace canhazgpu::testing
