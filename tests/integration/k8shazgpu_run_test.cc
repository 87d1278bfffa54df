// k8shazgpu run end to end: the real binary against the real simulated
// cluster, from the command line through scheduling, prepare, the CDI
// environment and the emulated container to the exit code, and what is
// left behind.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(K8shazgpuRunTest, ASingleGpuRunSeesExactlyItsGpuAndReturnsTheExitCode) {
  StartCluster(1, 2);
  CliResult r = K8s({"run", "--keep", "--name", "one", "--", "sh", "-c",
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
  CliResult r = K8s({"run", "--keep", "--product", "h100", "--min-memory", "40Gi", "--", "sh", "-c",
                     "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  const json tmpl =
      client_->Get(kTemplates, "default", Labelled(kTemplates, "default").at(0)).value();
  const json selectors = tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"];
  ASSERT_EQ(selectors.size(), 2u) << tmpl.dump();
  EXPECT_THAT(selectors[1]["cel"]["expression"].get<std::string>(), HasSubstr("h100"));
}

TEST_F(K8shazgpuRunTest, AMigPairIsTwoInstancesOfOneGpu) {
  StartCluster(1, 2, 2);
  CliResult r = K8s({"run", "--keep", "--mig", "1g.10gb", "--gpus", "2", "--name", "pair", "--",
                     "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
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
  // Said on stdout once scheduled (stderr names the node only when a
  // pending line was shown first, which a fast scheduler skips).
  EXPECT_THAT(first.out, HasSubstr("pod first is on node node-1"));
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
  EXPECT_THAT(K8s({"status", "--summary"}).out, HasSubstr("MIG-FREE"));
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
  CliResult r = K8s({"run", "--keep", "--name", "nv", "--product", "h100", "--min-memory", "40Gi",
                     "--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES"});
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
  CliResult r =
      RunProgram({"timeout", "120", K8SHAZGPU_BINARY, "--kubeconfig", Kubeconfig(), "-n", "team",
                  "run", "--keep", "--no-sync", "--name", "early", "--", "echo", "ok"},
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
  CliResult slow =
      RunProgram({"timeout", "120", K8SHAZGPU_BINARY, "run", "--no-sync", "--", "true"}, env);
  EXPECT_EQ(slow.exit_code, 1);
  EXPECT_THAT(slow.err, HasSubstr("k8shazgpu: cannot reach the API server http"));
  EXPECT_THAT(slow.err, HasSubstr("gave up after 3 tries of at most 300 ms"));
  EXPECT_EQ(std::count(slow.err.begin(), slow.err.end(), '\n'), 1) << slow.err;
  EXPECT_THAT(AllPods(), IsEmpty());
}

TEST_F(K8shazgpuRunTest, VllmRunHasItsDefaultsAndTimeoutIsTheDeadline) {
  StartCluster(1, 1);
  // The server keeps running a moment, as a real one does: the port-forward
  // line is printed once the pod is seen running, which a command that
  // ends at once can skip on a loaded machine.
  CliResult vllm = K8s({"vllm", "run", "--keep", "--name", "llm", "--", "sh", "-c",
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

}  // namespace
}  // namespace canhazgpu::testing
