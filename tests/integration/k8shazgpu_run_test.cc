// k8shazgpu run end to end: the real binary against the real simulated
// cluster (k8shazgpu-sim cluster, with k8shazgpu-node on every node), from
// the command line through scheduling, prepare, the CDI environment and
// the emulated container to the exit code, and what is left behind.
#include <signal.h>

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/terminal_session.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
namespace fs = std::filesystem;

const kube::ResourceRef kTemplates = kube::kResourceClaimTemplates;

class K8shazgpuRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/k8shazgpu_run_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cluster_dir_ = dir_ + "/cluster";
  }
  // A cluster of `nodes` x `gpus`, the first `mig` GPUs of each in MIG mode.
  // `driver` "nvidia": NVIDIA's classes and slices (k8shazgpu-sim --driver).
  void StartCluster(int nodes, int gpus, int mig = 0, const std::string& driver = "canhazgpu") {
    sim_ = SpawnUntilReady(
        {K8SHAZGPU_SIM_BINARY, "cluster", "--dir", cluster_dir_, "--nodes", std::to_string(nodes),
         "--gpus-per-node", std::to_string(gpus), "--mig-gpus", std::to_string(mig), "--driver",
         driver, "--node-binary", K8SHAZGPU_NODE_BINARY},
        {}, cluster_dir_ + "/ready", dir_ + "/sim.log");
    ASSERT_TRUE(fs::exists(cluster_dir_ + "/ready")) << ReadFile(dir_ + "/sim.log");
    kube::LoadOptions load;
    load.kubeconfig_flag = Kubeconfig();
    client_ = kube::Client::Create(kube::LoadRestConfig(load).value(), {.qps = 1000, .burst = 1000})
                  .value();
    // Every node has published its GPUs: a run never waits for a slice.
    ASSERT_TRUE(Eventually([&] {
      absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
      std::set<std::string> published;
      for (const json& s : slices.ok() ? (*slices)["items"] : json::array()) {
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
    if (sim_ > 0) {
      kill(sim_, SIGTERM);
      ExitCodeOf(sim_);
    }
    fs::remove_all(dir_);
  }

  std::string Kubeconfig() const { return cluster_dir_ + "/kubeconfig"; }
  std::map<std::string, std::string> Env() const {
    return {{"KUBECONFIG", Kubeconfig()}, {"HOME", dir_}};
  }
  // k8shazgpu with `args`, bounded so that a hang fails the test.
  CliResult K8s(std::vector<std::string> args) {
    args.insert(args.begin(), {"timeout", "120", K8SHAZGPU_BINARY});
    return RunProgram(args, Env());
  }
  // Started in the background, stdout and stderr into files.
  int SpawnK8s(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {"sh", "-c", "exec \"$0\" \"$@\" > " + Out(name),
                                     K8SHAZGPU_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return SpawnProgram(argv, Env(), {.stderr_path = Err(name)});
  }
  std::string Out(const std::string& name) const { return dir_ + "/" + name + ".out"; }
  std::string Err(const std::string& name) const { return dir_ + "/" + name + ".err"; }

  json Pod(const std::string& name, const std::string& ns = "default") {
    return client_->Get(kube::kPods, ns, name).value_or(json::object());
  }
  std::string Phase(const std::string& name) {
    return Pod(name).value("/status/phase"_json_pointer, std::string());
  }
  // The names of the objects of `ref` that carry a run label.
  std::vector<std::string> Labelled(const kube::ResourceRef& ref, const std::string& ns = "") {
    std::vector<std::string> names;
    absl::StatusOr<json> list = client_->ListAll(ref, ns, {.label_selector = "canhazgpu.dev/run"});
    if (!list.ok()) return {"error: " + std::string(list.status().message())};
    for (const json& o : (*list)["items"]) names.push_back(o["metadata"]["name"]);
    return names;
  }
  std::vector<std::string> AllPods() {
    // Kept in a variable: a range-for over a temporary's member dangles.
    const json pods = client_->ListAll(kube::kPods, "").value();
    std::vector<std::string> names;
    for (const json& o : pods["items"]) names.push_back(o["metadata"]["name"]);
    return names;
  }
  // The UUID of GPU `index` of `node` as its fake host has it.
  std::string Uuid(const std::string& node, int index) {
    const json host = json::parse(ReadFile(cluster_dir_ + "/nodes/" + node + "/fake-host.json"));
    return host["gpus"][index]["uuid"];
  }
  // The devices pod `name`'s container was given ("gpu-0"), from the
  // kubelet's allocatedResourcesStatus (the claim is freed once it ends).
  std::vector<std::string> Devices(const std::string& name) {
    std::vector<std::string> out;
    const json pod = Pod(name);
    for (const json& s : pod.value(
             "/status/containerStatuses/0/allocatedResourcesStatus"_json_pointer, json::array())) {
      for (const json& r : s.value("resources", json::array())) {
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
      const json status = client_->Get(kube::kNodeGpuStatuses, "", node).value_or(json());
      total = status.value("/status/summary/total"_json_pointer, 0);
      return status.value("/status/summary/held"_json_pointer, 0) == gpus;
    }));
    // ... and its slice no longer offers them: until then the scheduler may
    // still place a claim on a GPU the node will refuse to prepare.
    ASSERT_TRUE(Eventually([&] {
      absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
      if (!slices.ok()) return false;
      int offered = 0;
      for (const json& s : (*slices)["items"]) {
        if (s["spec"].value("nodeName", "") != node) continue;
        offered += static_cast<int>(s["spec"].value("devices", json::array()).size());
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
  int sim_ = 0;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(K8shazgpuRunTest, ASingleGpuRunSeesExactlyItsGpuAndReturnsTheExitCode) {
  StartCluster(1, 2);
  CliResult r = K8s({"run", "--name", "one", "--", "sh", "-c",
                     "echo $CUDA_VISIBLE_DEVICES $NVIDIA_VISIBLE_DEVICES; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json pod = Pod("one");
  const std::vector<std::string> devices = Devices("one");
  ASSERT_EQ(devices.size(), 1u) << pod.dump();
  const int index = devices[0] == "gpu-0" ? 0 : 1;
  EXPECT_EQ(r.out, std::to_string(index) + " " + Uuid("node-0", index) + "\n");
  EXPECT_THAT(r.err, HasSubstr("pod one created in namespace default"));
  // What run made: the pod and its template, labelled, the template owned
  // by the pod.
  EXPECT_EQ(pod["metadata"]["labels"]["canhazgpu.dev/user"].get<std::string>().empty(), false);
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["containers"][0]["command"],
            (json{"sh", "-c", "echo $$CUDA_VISIBLE_DEVICES $$NVIDIA_VISIBLE_DEVICES; exit 3"}));
  const std::vector<std::string> templates = Labelled(kTemplates, "default");
  ASSERT_EQ(templates.size(), 1u);
  const json tmpl = client_->Get(kTemplates, "default", templates[0]).value();
  EXPECT_EQ(tmpl["metadata"]["labels"], pod["metadata"]["labels"]);
  EXPECT_EQ(tmpl["metadata"]["ownerReferences"][0]["uid"], pod["metadata"]["uid"]);
}

TEST_F(K8shazgpuRunTest, TwoGpusAndArgumentsKeptByteForByte) {
  StartCluster(1, 2);
  CliResult two = K8s({"run", "--gpus", "2", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, "0,1\n");
  const std::vector<std::string> args = {"a  b", "{\"method\": \"mtp\", \"k\": [1, 2]}",
                                         "$(HOME) $$ $", "'quoted' \"twice\"", ""};
  std::vector<std::string> argv = {"run", "--env",  "GREETING=hi $(USER)",
                                   "--",  "printf", "[%s]\\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  CliResult printed = K8s(argv);
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_EQ(printed.out,
            "[a  b]\n[{\"method\": \"mtp\", \"k\": [1, 2]}]\n[$(HOME) $$ $]\n"
            "['quoted' \"twice\"]\n[]\n");
  CliResult env =
      K8s({"run", "--env", "GREETING=hi $(USER)", "--", "sh", "-c", "echo \"$GREETING\""});
  EXPECT_EQ(env.out, "hi $(USER)\n") << env.err;
}

TEST_F(K8shazgpuRunTest, AttributesSelectTheGpus) {
  StartCluster(1, 1);
  CliResult r = K8s({"run", "--product", "h100", "--min-memory", "40Gi", "--", "sh", "-c",
                     "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  const json tmpl =
      client_->Get(kTemplates, "default", Labelled(kTemplates, "default").at(0)).value();
  const json selectors = tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"];
  ASSERT_EQ(selectors.size(), 2u) << tmpl.dump();
  EXPECT_THAT(selectors[1]["cel"]["expression"].get<std::string>(), HasSubstr("h100"));
}

TEST_F(K8shazgpuRunTest, TwoRunsShareOneNamedClaim) {
  StartCluster(1, 2);
  CliResult a = K8s(
      {"run", "--share", "pool", "--name", "a", "--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"});
  CliResult b = K8s(
      {"run", "--share", "pool", "--name", "b", "--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_THAT(a.out, HasSubstr("GPU-"));
  const json claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  EXPECT_EQ(claim["metadata"]["labels"]["canhazgpu.dev/share"], "pool");
  std::set<std::string> owners;
  for (const json& o : claim["metadata"]["ownerReferences"]) owners.insert(o["name"]);
  EXPECT_EQ(owners, (std::set<std::string>{"a", "b"}));
  // By name, not from a template.
  EXPECT_FALSE(Pod("a")["status"].contains("resourceClaimStatuses")) << Pod("a").dump();
  EXPECT_EQ(Pod("b")["spec"]["resourceClaims"][0]["resourceClaimName"], "pool");
  EXPECT_THAT(Labelled(kTemplates, "default"), IsEmpty());
  // Another request under the same name is refused, creating nothing.
  CliResult other = K8s({"run", "--share", "pool", "--gpus", "2", "--name", "c", "--", "true"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("exists with another request"));
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "c").status()));
}

// Another user's shared claim is joined only with its creator's consent.
TEST_F(K8shazgpuRunTest, AnotherUsersSharedClaimNeedsTheirConsent) {
  StartCluster(1, 2);
  CliResult a = K8s({"run", "--share", "pool", "--share-with", "bob", "--name", "a", "--detach",
                     "--", "sleep", "300"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  json claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  const std::string me = claim["metadata"]["labels"]["canhazgpu.dev/user"];
  EXPECT_EQ(claim["metadata"]["annotations"]["canhazgpu.dev/share-with"], "bob");
  // The claim as if alice had made it: this user is not on her list.
  claim["metadata"]["labels"]["canhazgpu.dev/user"] = "alice";
  ASSERT_TRUE(client_->Update(kube::kResourceClaims, "default", claim).ok());
  CliResult b = K8s({"run", "--share", "pool", "--name", "b", "--", "true"});
  EXPECT_NE(b.exit_code, 0);
  EXPECT_THAT(b.err, HasSubstr("the shared claim 'pool' is alice's, who has not let " + me));
  EXPECT_TRUE(kube::IsApiNotFound(client_->Get(kube::kPods, "default", "b").status()));
  // She lets everyone in.
  claim = client_->Get(kube::kResourceClaims, "default", "pool").value();
  claim["metadata"]["annotations"]["canhazgpu.dev/share-with"] = "*";
  ASSERT_TRUE(client_->Update(kube::kResourceClaims, "default", claim).ok());
  CliResult c = K8s({"run", "--share", "pool", "--name", "c", "--", "true"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
}

TEST_F(K8shazgpuRunTest, AMigPairIsTwoInstancesOfOneGpu) {
  StartCluster(1, 2, 2);
  CliResult r = K8s({"run", "--mig", "1g.10gb", "--gpus", "2", "--name", "pair", "--", "sh", "-c",
                     "echo $CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::MatchesRegex("MIG-[^,]+,MIG-[^,]+\n"));
  const std::vector<std::string> devices = Devices("pair");
  ASSERT_EQ(devices.size(), 2u);
  // gpu-N-mig-...: the same N.
  EXPECT_EQ(devices[0].substr(0, devices[0].find("-mig")),
            devices[1].substr(0, devices[1].find("-mig")));
  const json tmpl =
      client_->Get(kTemplates, "default", Labelled(kTemplates, "default").at(0)).value();
  EXPECT_EQ(tmpl["spec"]["spec"]["devices"]["constraints"][0]["matchAttribute"],
            "gpu.canhazgpu.dev/parentUUID");
  EXPECT_EQ(tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "mig.canhazgpu.dev");
}

TEST_F(K8shazgpuRunTest, ARunWaitsInLineWhileTheClusterIsFullAndStartsWhenAGpuFrees) {
  StartCluster(1, 1);
  CliResult first =
      K8s({"run", "--detach", "--name", "first", "--", "sh", "-c", WaitForGate("first")});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(Eventually([&] { return Phase("first") == "Running"; })) << Pod("first").dump();
  const int second = SpawnK8s("second", {"run", "--name", "second", "--", "echo", "second ran"});
  EXPECT_TRUE(Eventually([&] {
    const std::string err = ReadFile(Err("second"));
    // Why, from the allocator over the cluster: who has the GPU.
    return err.find("1st of 1 in line: no node can allocate") != std::string::npos &&
           err.find("(pod first, user ") != std::string::npos;
  })) << ReadFile(Err("second"));
  EXPECT_EQ(Phase("second"), "Pending");
  WriteFile(Gate("first"), "");
  EXPECT_EQ(ExitCodeOf(second), 0) << ReadFile(Err("second"));
  EXPECT_EQ(ReadFile(Out("second")), "second ran\n");
}

// status, queue and explain over the same cluster: a GPU held locally with
// canhazgpu on node-0, one taken by a run on node-1, and a run waiting.
TEST_F(K8shazgpuRunTest, StatusQueueAndExplainSayWhoHoldsWhatAndWhyARunWaits) {
  StartCluster(2, 1);
  HoldLocally("node-0");
  CliResult first =
      K8s({"run", "--detach", "--name", "first", "--", "sh", "-c", WaitForGate("first")});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.err, HasSubstr("node-1"));
  const int waiting = SpawnK8s("waiting", {"run", "--name", "waiting", "--", "true"});
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(Err("waiting")).find("in line: ") != std::string::npos;
  })) << ReadFile(Err("waiting"));
  // The run's own line names both holders.
  EXPECT_TRUE(Eventually([&] {
    const std::string err = ReadFile(Err("waiting"));
    return err.find("(canhazgpu)") != std::string::npos &&
           err.find("(pod first, user ") != std::string::npos;
  })) << ReadFile(Err("waiting"));

  CliResult status = K8s({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  std::map<std::string, std::string> states;
  const json report = json::parse(status.out);
  for (const json& d : report["devices"]) {
    states[d.value("node", "")] = d.value("state", "");
  }
  EXPECT_EQ(states, (std::map<std::string, std::string>{{"node-0", "Held"}, {"node-1", "Claimed"}}))
      << status.out;
  CliResult table = K8s({"status", "--node", "node-1"});
  EXPECT_THAT(table.out, HasSubstr("(from label; default/first)"));
  EXPECT_THAT(table.out, ::testing::Not(HasSubstr("node-0")));
  EXPECT_THAT(K8s({"status", "--summary"}).out, HasSubstr("TOTAL"));
  CliResult unknown = K8s({"status", "--node", "node-9"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no node \"node-9\" in the cluster"));

  CliResult queue = K8s({"queue", "--json"});
  ASSERT_EQ(queue.exit_code, 0) << queue.err;
  const json entries = json::parse(queue.out);
  ASSERT_EQ(entries.size(), 1u) << queue.out;
  EXPECT_EQ(entries[0]["name"], "waiting");
  EXPECT_EQ(entries[0]["position"], 1);

  // Global flags after the command, yaml: the same explanation as data.
  CliResult why = K8s({"explain", "waiting", "-n", "default"});
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr("pod default/waiting is pending"));
  EXPECT_THAT(why.out, HasSubstr("held by"));
  EXPECT_THAT(why.out, HasSubstr("(pod first, user "));
  EXPECT_THAT(why.out, HasSubstr("preemption cannot help"));
  CliResult as_yaml = K8s({"-o", "yaml", "explain", "pod/waiting"});
  EXPECT_THAT(as_yaml.out, HasSubstr("pending: true"));
  CliResult missing = K8s({"explain", "resourceclaim/nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no resourceclaim 'nope' in namespace default"));

  // The GPU frees: the waiting run starts.
  WriteFile(Gate("first"), "");
  EXPECT_EQ(ExitCodeOf(waiting), 0) << ReadFile(Err("waiting"));
  EXPECT_THAT(K8s({"queue"}).out, HasSubstr("No pod is waiting"));
}

TEST_F(K8shazgpuRunTest, ARequestNoNodeCouldEverHoldFailsAtOnceAndCreatesNothing) {
  StartCluster(2, 2);
  CliResult r = K8s({"run", "--gpus", "3", "--", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("can never run: "));
  EXPECT_THAT(r.err, HasSubstr("nothing was created"));
  EXPECT_THAT(Labelled(kTemplates), IsEmpty());
  EXPECT_THAT(AllPods(), IsEmpty());
  CliResult product = K8s({"run", "--product", "no-such-gpu", "--", "true"});
  EXPECT_EQ(product.exit_code, 1);
  EXPECT_THAT(product.err, HasSubstr("can never run: "));
}

// The same run against NVIDIA's DRA driver: its classes, its attribute
// domain, its CDI environment.
TEST_F(K8shazgpuRunTest, TheSameRunWorksWithNvidiasDriver) {
  StartCluster(1, 2, 0, "nvidia");
  CliResult r = K8s({"run", "--name", "nv", "--product", "h100", "--min-memory", "40Gi", "--", "sh",
                     "-c", "echo $NVIDIA_VISIBLE_DEVICES"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("class gpu.nvidia.com"));
  EXPECT_THAT(r.out, HasSubstr("GPU-"));
  CliResult status = K8s({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json devices = json::parse(status.out)["devices"];
  ASSERT_EQ(devices.size(), 2u) << status.out;
  EXPECT_EQ(devices[0]["driver"], "gpu.nvidia.com");
}

// Completion from the command table, with the cluster's node names; the
// man page the build made is the binary's.
TEST_F(K8shazgpuRunTest, CompletionOffersCommandsFlagsAndNodeNames) {
  StartCluster(2, 1);
  const std::string script = dir_ + "/completion.bash";
  WriteFile(script, K8s({"completion", "bash"}).out);
  auto complete = [&](const std::string& words, int cword) {
    const std::string program = "source '" + script + "'; COMP_WORDS=(" + words +
                                "); COMP_CWORD=" + std::to_string(cword) +
                                "; _k8shazgpu; printf '%s\\n' \"${COMPREPLY[@]}\"";
    return RunProgram({"bash", "-c", program}, Env()).out;
  };
  EXPECT_EQ(complete(std::string("'") + K8SHAZGPU_BINARY + "' 'ex'", 1), "explain\n");
  EXPECT_EQ(complete(std::string("'") + K8SHAZGPU_BINARY + "' 'run' '--node' ''", 3),
            "node-0\nnode-1\n");
  EXPECT_EQ(complete(std::string("'") + K8SHAZGPU_BINARY + "' 'completion' ''", 2), "bash\nzsh\n");
  EXPECT_THAT(K8s({"completion", "zsh"}).out, ::testing::StartsWith("#compdef k8shazgpu\n"));
  const CliResult man = K8s({"manpage"});
  EXPECT_THAT(man.out, HasSubstr(".SS \"k8shazgpu explain POD|CLAIM [flags]\""));
  EXPECT_EQ(ReadFile(std::string(K8SHAZGPU_BINARY) + ".1"), man.out);
  EXPECT_THAT(K8s({"--help"}).out, ::testing::Not(HasSubstr("manpage")));
}

// The real kubectl, an independent client, reads what run created: the
// argv as a list, the labels, the template owned by the pod; and deleting
// the pod with kubectl takes the template with it (the garbage collector).
TEST_F(K8shazgpuRunTest, KubectlSeesWhatRunCreatedAndDeletingThePodRemovesTheRest) {
  if (std::string why = NoRecentKubectl("the kubectl check of k8shazgpu run does not run");
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  StartCluster(1, 1);
  CliResult run = K8s({"run", "--detach", "--name", "seen", "--", "sh", "-c", WaitForGate("seen"),
                       "an argument with spaces"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  CliResult pod = RunProgram({"kubectl", "get", "pod", "seen", "-o", "json"}, Env());
  ASSERT_EQ(pod.exit_code, 0) << pod.err;
  const json object = json::parse(pod.out);
  EXPECT_EQ(object["spec"]["containers"][0]["command"],
            (json{"sh", "-c", WaitForGate("seen"), "an argument with spaces"}));
  EXPECT_TRUE(object["metadata"]["labels"].contains("canhazgpu.dev/run"));
  CliResult templates = RunProgram(
      {"kubectl", "get", "resourceclaimtemplates", "-l", "canhazgpu.dev/run", "-o", "json"}, Env());
  ASSERT_EQ(templates.exit_code, 0) << templates.err;
  const json items = json::parse(templates.out)["items"];
  ASSERT_EQ(items.size(), 1u) << templates.out;
  EXPECT_EQ(items[0]["metadata"]["ownerReferences"][0]["name"], "seen");
  CliResult deleted = RunProgram({"kubectl", "delete", "pod", "seen", "--timeout=60s"}, Env());
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(Eventually([&] { return Labelled(kTemplates).empty(); }))
      << ::testing::PrintToString(Labelled(kTemplates));
}

TEST_F(K8shazgpuRunTest, ASignalEndingTheCommandIs128PlusIt) {
  StartCluster(1, 1);
  CliResult r = K8s({"run", "--", "sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.exit_code, 137) << r.err;
}

TEST_F(K8shazgpuRunTest, DetachReturnsOnceScheduledAndSaysHowToFollow) {
  StartCluster(1, 1);
  CliResult r = K8s(
      {"run", "--detach", "--name", "bg", "--port", "8080", "--", "sh", "-c", WaitForGate("bg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod bg is on node node-0"));
  EXPECT_THAT(r.out, HasSubstr("kubectl logs -f -n default pod/bg"));
  EXPECT_THAT(r.out, HasSubstr("kubectl port-forward -n default pod/bg 8080:8080"));
  EXPECT_THAT(r.out, HasSubstr("k8shazgpu cleanup -n default --name bg"));
  EXPECT_EQ(Pod("bg")["spec"]["containers"][0]["ports"][0]["containerPort"], 8080);
  EXPECT_TRUE(Eventually([&] { return Phase("bg") == "Running"; }));
  WriteFile(Gate("bg"), "");
}

TEST_F(K8shazgpuRunTest, AnInterruptWithoutATerminalDeletesEverything) {
  StartCluster(1, 1);
  // Running, streaming its output.
  const int running = SpawnK8s(
      "running", {"run", "--name", "running", "--", "sh", "-c", "echo started; exec sleep 600"});
  ASSERT_TRUE(Eventually([&] { return ReadFile(Out("running")) == "started\n"; }))
      << ReadFile(Err("running"));
  kill(running, SIGINT);
  EXPECT_EQ(ExitCodeOf(running), 130) << ReadFile(Err("running"));
  EXPECT_THAT(ReadFile(Err("running")), HasSubstr("deleted pod running"));
  // Pending in line (the GPU is held on the node).
  HoldLocally("node-0");
  const int pending = SpawnK8s("pending", {"run", "--", "true"});
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(Err("pending")).find("in line") != std::string::npos;
  })) << ReadFile(Err("pending"));
  kill(pending, SIGTERM);
  EXPECT_EQ(ExitCodeOf(pending), 143) << ReadFile(Err("pending"));
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods).empty() && Labelled(kTemplates).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods))
      << ::testing::PrintToString(Labelled(kTemplates));
}

// SIGINT while each write of run is in flight (held by the simulated
// server's fault injection): whatever the server made of it, nothing
// labelled is left behind.
TEST_F(K8shazgpuRunTest, AnInterruptDuringEachWriteLeavesNothing) {
  StartCluster(1, 1);
  auto stall = [&](const std::string& verb, const std::string& resource) {
    const json rule = {{"verb", verb}, {"resource", resource}, {"stallMillis", 3000}};
    CliResult r =
        RunProgram({"curl", "-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data",
                    rule.dump(), client_->config().server + "/debug/k8shazgpu-sim/faults"},
                   {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  struct Stage {
    std::string verb;
    std::string resource;
    std::function<bool()> in_flight;  // the write before the stalled one is done
  };
  const std::vector<Stage> stages = {
      {"create", "resourceclaimtemplates", [] { return true; }},
      {"create", "pods", [&] { return !Labelled(kTemplates).empty(); }},
      {"patch", "resourceclaimtemplates", [&] { return !AllPods().empty(); }},
  };
  for (const Stage& stage : stages) {
    SCOPED_TRACE(stage.verb + " " + stage.resource);
    stall(stage.verb, stage.resource);
    const int run = SpawnK8s("stage", {"run", "--", "true"});
    ASSERT_TRUE(Eventually(stage.in_flight)) << ReadFile(Err("stage"));
    kill(run, SIGINT);
    EXPECT_EQ(ExitCodeOf(run), 130) << ReadFile(Err("stage"));
    EXPECT_TRUE(Eventually([&] {
      return Labelled(kube::kPods).empty() && Labelled(kTemplates).empty() &&
             Labelled(kube::kResourceClaims).empty();
    })) << ReadFile(Err("stage"));
  }
}

TEST_F(K8shazgpuRunTest, BadInputIsOneLineAndCreatesNothing) {
  StartCluster(1, 1);
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"run", "--gpus", "2", "-G", "node-0:0", "--", "true"}, 2, "--gpus and -G"},
      {{"run", "--where", "device.attributes[", "--", "true"}, 2, "--where: 1:"},
      {{"run", "--class", "fast", "--", "true"},
       2,
       "DeviceClass 'fast' does not exist; the cluster has gpu.canhazgpu.dev, mig.canhazgpu.dev"},
      {{"run", "--node", "node-7", "--", "true"}, 2, "node 'node-7' does not exist"},
      {{"run", "--env", "NOVALUE", "--", "true"}, 2, "NAME=VALUE"},
      {{"run", "--gpu", "1", "--", "true"}, 2, "did you mean --gpus"},
      {{
           "run",
           "--",
       },
       2,
       "no command"},
      {{"-n", "nowhere", "run", "--", "true"}, 1, "namespace 'nowhere' does not exist"},
      {{"--output", "toml", "run", "--", "true"}, 2, "json, yaml, wide"},
      {{"walk"}, 2, "unknown command 'walk'"},
  };
  for (const Case& c : cases) {
    CliResult r = K8s(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << ::testing::PrintToString(c.args) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says)) << ::testing::PrintToString(c.args);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, ::testing::StartsWith("k8shazgpu: "));
  }
  EXPECT_THAT(AllPods(), IsEmpty());
  EXPECT_THAT(Labelled(kTemplates), IsEmpty());
}

TEST_F(K8shazgpuRunTest, GlobalFlagsWorkBeforeTheCommandAndAServerThatIsGoneIsOneLine) {
  StartCluster(1, 1);
  ASSERT_TRUE(
      client_->CreateObject(kube::kNamespaces, "", {{"metadata", {{"name", "team"}}}}).ok());
  CliResult r = RunProgram({"timeout", "120", K8SHAZGPU_BINARY, "--kubeconfig", Kubeconfig(), "-n",
                            "team", "run", "--name", "early", "--", "echo", "ok"},
                           {{"HOME", dir_}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(Pod("early", "team")["metadata"]["namespace"], "team");

  kill(sim_, SIGTERM);
  EXPECT_EQ(ExitCodeOf(sim_), 0);
  sim_ = 0;
  CliResult gone = K8s({"run", "--", "true"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("k8shazgpu: cannot reach the API server http"));
  EXPECT_EQ(std::count(gone.err.begin(), gone.err.end(), '\n'), 1) << gone.err;
}

TEST_F(K8shazgpuRunTest, NoPermissionAndASlowServerAreOneLineEach) {
  StartCluster(1, 1);
  // The simulated server's fault injection: the next create of a template
  // is refused as RBAC refuses, then every list of classes stalls.
  auto fault = [&](const json& rule) {
    CliResult r =
        RunProgram({"curl", "-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data",
                    rule.dump(), client_->config().server + "/debug/k8shazgpu-sim/faults"},
                   {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  fault({{"verb", "create"}, {"resource", "resourceclaimtemplates"}, {"code", 403}});
  CliResult denied = K8s({"run", "--", "true"});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err,
              HasSubstr("k8shazgpu: cannot create resourceclaimtemplates.resource.k8s.io"));
  EXPECT_THAT(denied.err, HasSubstr("no RBAC permission"));
  EXPECT_EQ(std::count(denied.err.begin(), denied.err.end(), '\n'), 1) << denied.err;
  EXPECT_THAT(AllPods(), IsEmpty());

  fault({{"verb", "list"}, {"resource", "deviceclasses"}, {"count", 10}, {"stallMillis", 5000}});
  std::map<std::string, std::string> env = Env();
  env["K8SHAZGPU_REQUEST_TIMEOUT_MS"] = "300";
  CliResult slow = RunProgram({"timeout", "120", K8SHAZGPU_BINARY, "run", "--", "true"}, env);
  EXPECT_EQ(slow.exit_code, 1);
  EXPECT_THAT(slow.err, HasSubstr("k8shazgpu: cannot reach the API server http"));
  EXPECT_THAT(slow.err, HasSubstr("gave up after 3 tries of at most 300 ms"));
  EXPECT_EQ(std::count(slow.err.begin(), slow.err.end(), '\n'), 1) << slow.err;
  EXPECT_THAT(AllPods(), IsEmpty());
}

TEST_F(K8shazgpuRunTest, OnATerminalTheLineIsRedrawnAndCtrlCAsksDetachOrDelete) {
  StartCluster(1, 1);
  HoldLocally("node-0");
  CliHost host;
  host.env() = Env();
  {
    // Waits in line (the GPU is held on the node); ^C, then "d": detached,
    // the pod stays.
    TerminalSession session(host, {"run", "--name", "kept", "--", "true"}, 100, K8SHAZGPU_BINARY);
    ASSERT_TRUE(session.WaitFor("in line")) << session.screen();
    EXPECT_THAT(session.screen(), HasSubstr("\r\033[Kwaiting for 1 GPU, 1st of 1"));
    session.Type("\x03");
    ASSERT_TRUE(session.WaitFor("[d/D]")) << session.screen();
    session.Type("d\n");
    EXPECT_TRUE(session.WaitFor("k8shazgpu cleanup -n default --name kept")) << session.screen();
    EXPECT_EQ(session.Wait(), 0) << session.screen();
    EXPECT_EQ(Phase("kept"), "Pending");
  }
  {
    TerminalSession session(host, {"run", "--name", "gone", "--", "true"}, 100, K8SHAZGPU_BINARY);
    ASSERT_TRUE(session.WaitFor("in line")) << session.screen();
    session.Type("\x03");
    ASSERT_TRUE(session.WaitFor("[d/D]")) << session.screen();
    session.Type("D\n");
    EXPECT_EQ(session.Wait(), 130) << session.screen();
    EXPECT_TRUE(Eventually([&] {
      return kube::IsApiNotFound(client_->Get(kube::kPods, "default", "gone").status());
    }));
  }
}

TEST_F(K8shazgpuRunTest, VllmRunHasItsDefaultsAndTimeoutIsTheDeadline) {
  StartCluster(1, 1);
  // The server keeps running a moment, as a real one does: the port-forward
  // line is printed once the pod is seen running, which a command that
  // ends at once can skip on a loaded machine.
  CliResult vllm = K8s({"vllm", "run", "--name", "llm", "--", "sh", "-c",
                        "echo serving on $CUDA_VISIBLE_DEVICES; sleep 2"});
  EXPECT_EQ(vllm.exit_code, 0) << vllm.err;
  EXPECT_EQ(vllm.out, "serving on 0\n");
  EXPECT_THAT(vllm.err, HasSubstr("kubectl port-forward -n default pod/llm 8000:8000"));
  const json pod = Pod("llm");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "vllm/vllm-openai:latest");
  EXPECT_EQ(pod["spec"]["volumes"][0]["emptyDir"]["medium"], "Memory");
  EXPECT_EQ(pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/dev/shm");
  // Not from a checkout, but the node runs the cache agent: the image joins
  // the plan, and the pod goes where it is Ready, with the model cache.
  EXPECT_THAT(vllm.err, HasSubstr("added image vllm-openai-latest to cache plan default"));
  EXPECT_EQ(pod.value("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                      "nodeSelectorTerms/0/matchFields/0/values"_json_pointer,
                      json()),
            json({"node-0"}));
  EXPECT_EQ(pod["spec"]["containers"][0]["env"][0],
            json({{"name", "HF_HUB_CACHE"}, {"value", "/cache/hf"}}));

  CliResult late = K8s({"run", "--timeout", "1s", "--", "sleep", "600"});
  EXPECT_GT(late.exit_code, 128) << late.err;
  EXPECT_THAT(late.err, HasSubstr("DeadlineExceeded"));
}

// A pod with the run labels as another user's run (the CLI's user is the
// OS user, so another one's runs are made here).
void CreateOthersPod(kube::Client& client, const std::string& name, const std::string& kind) {
  json labels = {{"canhazgpu.dev/run", "other" + name}, {"canhazgpu.dev/user", "someone-else"}};
  if (!kind.empty()) labels["canhazgpu.dev/kind"] = kind;
  ASSERT_TRUE(client
                  .CreateObject(kube::kPods, "default",
                                {{"apiVersion", "v1"},
                                 {"kind", "Pod"},
                                 {"metadata", {{"name", name}, {"labels", labels}}},
                                 {"spec",
                                  {{"restartPolicy", "Never"},
                                   {"containers",
                                    {{{"name", "main"},
                                      {"image", "ubuntu:24.04"},
                                      {"command", {"sleep", "600"}}}}}}}})
                  .ok());
}

TEST_F(K8shazgpuRunTest, ReserveHoldsAGpuUntilReleased) {
  StartCluster(1, 1);
  CliResult held = K8s({"reserve", "--name", "held", "--duration", "1h"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_THAT(held.out, HasSubstr("reserved gpu-0 on node node-0 for 1h"));
  EXPECT_THAT(held.out, HasSubstr("kubectl exec -it -n default pod/held -- sh"));
  const json pod = Pod("held");
  EXPECT_EQ(pod["metadata"]["labels"]["canhazgpu.dev/kind"], "reservation");
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 3600);
  EXPECT_EQ(Phase("held"), "Running");
  CliResult status = K8s({"status"});
  EXPECT_THAT(status.out, HasSubstr("(from label; default/held)")) << status.out;
  // The GPU is held: another reservation waits in line, then gives up and
  // deletes what it made.
  CliResult waited = K8s({"reserve", "--name", "late", "--wait", "3s"});
  EXPECT_EQ(waited.exit_code, 3) << waited.err;
  EXPECT_THAT(waited.err, HasSubstr("in line"));
  EXPECT_THAT(waited.err, HasSubstr("pod late did not run within 3s; deleted it"));
  EXPECT_TRUE(Eventually([&] { return Labelled(kTemplates).size() == 1; }));
  // Another user's reservation is theirs to release; a name that is no
  // reservation is said so.
  CreateOthersPod(*client_, "theirs", "reservation");
  CliResult refused = K8s({"release", "theirs"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("reservation 'theirs' is someone-else's, not yours"));
  CliResult missing = K8s({"release", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no reservation named 'nope' in namespace default"));
  // Without a name: all of yours, and only yours.
  CliResult released = K8s({"release"});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out, "Released reservation held (node node-0)\n");
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods) == std::vector<std::string>{"theirs"} &&
           Labelled(kTemplates).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods));
  EXPECT_EQ(K8s({"release"}).out, "No reservations of yours in namespace default to release\n");
}

TEST_F(K8shazgpuRunTest, CleanupDeletesYourRunsAndLeftoversAndRefusesOthers) {
  StartCluster(1, 2);
  for (const std::string name : {"one", "two"}) {
    CliResult r = K8s({"run", "--detach", "--name", name, "--", "sh", "-c", WaitForGate(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CreateOthersPod(*client_, "theirs", "");
  // A run interrupted after its template: only the labels find it.
  const json one_labels = Pod("one")["metadata"]["labels"];
  ASSERT_TRUE(client_
                  ->CreateObject(
                      kTemplates, "default",
                      {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaimTemplate"},
                       {"metadata",
                        {{"name", "half-gpus-abcde"},
                         {"labels",
                          {{"canhazgpu.dev/run", "abcdefghij"},
                           {"canhazgpu.dev/user", one_labels["canhazgpu.dev/user"]}}}}},
                       {"spec",
                        {{"spec",
                          {{"devices",
                            {{"requests",
                              {{{"name", "gpus"},
                                {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}}}})
                  .ok());
  CliResult by_name = K8s({"cleanup", "--name", "one"});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_THAT(by_name.out,
              ::testing::MatchesRegex("deleted resourceclaimtemplate/one-gpus-[a-z0-9]+\n"
                                      "deleted pod/one\n"));
  CliResult refused = K8s({"cleanup", "--name", "theirs"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("run 'theirs' is someone-else's, not yours"));
  CliResult all = K8s({"cleanup", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("deleted resourceclaimtemplate/half-gpus-abcde\n"));
  EXPECT_THAT(all.out, HasSubstr("deleted pod/two\n"));
  EXPECT_THAT(all.out, ::testing::Not(HasSubstr("theirs")));
  EXPECT_THAT(all.err, HasSubstr("left 1 run(s) of other users (theirs)"));
  EXPECT_TRUE(Eventually([&] {
    return Labelled(kube::kPods) == std::vector<std::string>{"theirs"} &&
           Labelled(kTemplates).empty() && Labelled(kube::kResourceClaims).empty();
  })) << ::testing::PrintToString(Labelled(kube::kPods))
      << ::testing::PrintToString(Labelled(kube::kResourceClaims));
  CliResult everyone = K8s({"cleanup", "--all", "--all-users"});
  EXPECT_EQ(everyone.out, "deleted pod/theirs\n") << everyone.err;
  // Bad flags: one line each, exit 2.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"cleanup"},
                                               {"cleanup", "--all", "--name", "x"},
                                               {"cleanup", "stray"},
                                               {"release", "a", "b"},
                                               {"reserve", "--", "true"}}) {
    CliResult r = K8s(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace canhazgpu::testing
