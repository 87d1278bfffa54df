// What people apply to the simulated cluster, end to end with the real
// kubectl: workloads (Deployments, DaemonSets, Indexed Jobs), kubectl exec,
// and nodes of any shape from a cluster file.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"
#include "integration/sim_cluster_fixture.h"
#include "kube/client.h"
#include "kubesim/patch.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

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
  auto created = yaml::DocumentsToJson(ReadFile(manifest));
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

}  // namespace
}  // namespace canhazgpu::testing
