// The real kubectl as an independent client of the simulated API server
// (k8shazgpu-sim apiserver): if kubectl accepts it, it speaks the protocol.
// Skipped, saying so, where no kubectl 1.30 or newer is on PATH.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kObjects[] = R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.canhazgpu.dev
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.canhazgpu.dev"
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node1-gpu
spec:
  driver: gpu.canhazgpu.dev
  nodeName: node1
  pool: {name: node1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      productName: {string: "NVIDIA H100 80GB HBM3"}
    capacity:
      memory: {value: 80Gi}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim1
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.canhazgpu.dev}
---
apiVersion: v1
kind: Pod
metadata:
  name: pod1
  labels: {app: demo}
spec:
  containers:
  - name: main
    image: busybox
    resources:
      claims: [{name: gpu}]
  resourceClaims:
  - name: gpu
    resourceClaimName: claim1
)";

class SimKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why =
            NoRecentKubectl("the kubectl tests of the simulated API server do not run");
        !why.empty()) {
      GTEST_SKIP() << why;
    }
    char tmpl[] = "/tmp/sim_kubectl_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    kubeconfig_ = dir_ + "/kubeconfig";
    server_ = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--kubeconfig-out", kubeconfig_},
                              {}, kubeconfig_, dir_ + "/server.log");
    ASSERT_TRUE(std::filesystem::exists(kubeconfig_)) << ReadFile(dir_ + "/server.log");
    WriteFile(dir_ + "/objects.yaml", kObjects);
  }
  void TearDown() override {
    if (server_ > 0) {
      kill(server_, SIGTERM);
      EXPECT_EQ(ExitCodeOf(server_), 0) << "the server stops cleanly on SIGTERM";
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  CliResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), "kubectl");
    return RunProgram(args, {{"KUBECONFIG", kubeconfig_}, {"HOME", dir_}});
  }
  json GetJson(std::vector<std::string> args) {
    args.insert(args.begin(), "get");
    args.insert(args.end(), {"-o", "json"});
    CliResult r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  std::string dir_;
  std::string kubeconfig_;
  int server_ = -1;
};

TEST_F(SimKubectlTest, ApplyGetPatchDeleteTheDraObjects) {
  // kubectl validates against the OpenAPI documents the server serves.
  CliResult apply = Kubectl({"apply", "-f", dir_ + "/objects.yaml"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  EXPECT_THAT(apply.out, HasSubstr("deviceclass.resource.k8s.io/gpu.canhazgpu.dev created"));
  EXPECT_THAT(apply.out, HasSubstr("resourceslice.resource.k8s.io/node1-gpu created"));
  EXPECT_THAT(apply.out, HasSubstr("resourceclaim.resource.k8s.io/claim1 created"));
  EXPECT_THAT(apply.out, HasSubstr("pod/pod1 created"));

  json slice = GetJson({"resourceslice", "node1-gpu"});
  EXPECT_EQ(slice["spec"]["devices"][0]["capacity"]["memory"]["value"], "80Gi");
  EXPECT_EQ(slice["metadata"]["generation"], 1);
  EXPECT_EQ(slice["metadata"]["uid"].get<std::string>().size(), 36u);
  json pod = GetJson({"pod", "pod1"});
  EXPECT_EQ(pod["spec"]["resourceClaims"][0]["resourceClaimName"], "claim1");
  EXPECT_EQ(pod["metadata"]["namespace"], "default");

  CliResult again = Kubectl({"apply", "--validate=false", "-f", dir_ + "/objects.yaml"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("resourceclaim.resource.k8s.io/claim1 unchanged"));

  CliResult patch = Kubectl({"patch", "resourceslice", "node1-gpu", "--type=merge", "-p",
                             R"({"spec":{"pool":{"generation":2}}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  slice = GetJson({"resourceslice", "node1-gpu"});
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(slice["metadata"]["generation"], 2) << "a spec change bumps the generation";

  ASSERT_EQ(Kubectl({"label", "pod", "pod1", "tier=gpu"}).exit_code, 0);
  CliResult selected = Kubectl({"get", "pods", "-l", "tier=gpu", "-o", "name"});
  EXPECT_EQ(selected.out, "pod/pod1\n");
  CliResult by_field =
      Kubectl({"get", "resourceslices", "--field-selector", "spec.nodeName=node1", "-o", "name"});
  EXPECT_EQ(by_field.out, "resourceslice.resource.k8s.io/node1-gpu\n") << by_field.err;
  // The server's columns, as kubectl prints them (issue 30: NAME and AGE only).
  CliResult claims = Kubectl({"get", "resourceclaims"});
  EXPECT_THAT(claims.out, ::testing::MatchesRegex("NAME +STATE +AGE\nclaim1 +pending +[0-9]+s\n"))
      << claims.err;
  CliResult slices = Kubectl({"get", "resourceslices"});
  EXPECT_THAT(slices.out,
              ::testing::MatchesRegex("NAME +NODE +DRIVER +POOL +AGE\n"
                                      "node1-gpu +node1 +gpu.canhazgpu.dev +node1 +[0-9]+s\n"))
      << slices.err;
  CliResult bad_field = Kubectl({"get", "pods", "--field-selector", "spec.image=x"});
  EXPECT_NE(bad_field.exit_code, 0);
  EXPECT_THAT(bad_field.err, HasSubstr("field label not supported: spec.image"));

  CliResult ssa =
      Kubectl({"apply", "--server-side", "--validate=false", "-f", dir_ + "/objects.yaml"});
  ASSERT_EQ(ssa.exit_code, 0) << ssa.err;
  EXPECT_THAT(ssa.out, HasSubstr("serverside-applied"));

  CliResult del = Kubectl({"delete", "-f", dir_ + "/objects.yaml"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  CliResult gone = Kubectl({"get", "resourceclaim", "claim1"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("resourceclaims.resource.k8s.io \"claim1\" not found"));
}

TEST_F(SimKubectlTest, TheServerRejectsAnInvalidSliceLikeARealOne) {
  WriteFile(dir_ + "/bad.yaml", R"(apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: bad-slice
spec:
  driver: gpu.canhazgpu.dev
  pool: {name: node1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: GPU_0
)");
  CliResult bad = Kubectl({"apply", "--validate=false", "-f", dir_ + "/bad.yaml"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("The ResourceSlice \"bad-slice\" is invalid"));
  EXPECT_THAT(bad.err, HasSubstr("spec.devices[0].name: Invalid value: \"GPU_0\""));
  EXPECT_THAT(bad.err, HasSubstr("exactly one of `nodeName`, `nodeSelector`"));
  EXPECT_NE(Kubectl({"get", "resourceslice", "bad-slice"}).exit_code, 0) << "nothing was stored";

  WriteFile(dir_ + "/unknown.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nnope: 1\n");
  CliResult unknown = Kubectl({"create", "-f", dir_ + "/unknown.yaml"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("unknown field \"nope\""));
}

TEST_F(SimKubectlTest, WatchSeesChangesAsTheyHappen) {
  const std::string out = dir_ + "/watch.out";
  int watcher = SpawnProgram({"sh", "-c",
                              "exec kubectl get resourceclaims -w --output-watch-events -o "
                              "jsonpath='{.type} {.object.metadata.name}{\"\\n\"}' > " +
                                  out},
                             {{"KUBECONFIG", kubeconfig_}, {"HOME", dir_}});
  // The watch is open once the server has logged it.
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(dir_ + "/server.log").find("resourceclaims?resourceVersion=") !=
           std::string::npos;
  })) << ReadFile(dir_ + "/server.log");
  ASSERT_EQ(Kubectl({"apply", "--validate=false", "-f", dir_ + "/objects.yaml"}).exit_code, 0);
  ASSERT_EQ(Kubectl({"delete", "resourceclaim", "claim1"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return ReadFile(out).find("DELETED claim1") != std::string::npos; }))
      << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("ADDED claim1"));
  kill(watcher, SIGTERM);
  ExitCodeOf(watcher);
}

// kubectl over real TLS: the generated CA, its client certificate and a
// token, all from the kubeconfig the server wrote (mode 0600).
TEST_F(SimKubectlTest, KubectlTalksToTheTlsServer) {
  const std::string tls_config = dir_ + "/tls.kubeconfig";
  int tls = SpawnUntilReady({K8SHAZGPU_SIM_BINARY, "apiserver", "--tls", "--token", "t0k",
                             "--kubeconfig-out", tls_config},
                            {}, tls_config, dir_ + "/tls.log");
  ASSERT_TRUE(std::filesystem::exists(tls_config)) << ReadFile(dir_ + "/tls.log");
  EXPECT_EQ(std::filesystem::status(tls_config).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_THAT(ReadFile(tls_config), HasSubstr("server: https://127.0.0.1:"));
  CliResult ns = RunProgram({"kubectl", "get", "namespace", "default", "-o", "name"},
                            {{"KUBECONFIG", tls_config}, {"HOME", dir_}});
  EXPECT_EQ(ns.exit_code, 0) << ns.err;
  EXPECT_EQ(ns.out, "namespace/default\n");
  kill(tls, SIGTERM);
  EXPECT_EQ(ExitCodeOf(tls), 0);
}

// Container output written through the server's debug endpoint (with
// kubectl's own --raw), read back with kubectl logs, followed to the end.
TEST_F(SimKubectlTest, KubectlReadsAndFollowsPodLogs) {
  ASSERT_EQ(Kubectl({"apply", "--validate=false", "-f", dir_ + "/objects.yaml"}).exit_code, 0);
  CliResult waiting = Kubectl({"logs", "pod1"});
  EXPECT_NE(waiting.exit_code, 0);
  EXPECT_THAT(waiting.err, HasSubstr("is waiting to start"));

  const std::string endpoint = "/debug/k8shazgpu-sim/logs/default/pod1/main";
  WriteFile(dir_ + "/out1", "hello\nworld\n");
  ASSERT_EQ(Kubectl({"create", "--raw", endpoint, "-f", dir_ + "/out1"}).exit_code, 0);
  EXPECT_EQ(Kubectl({"logs", "pod1"}).out, "hello\nworld\n");
  EXPECT_EQ(Kubectl({"logs", "pod1", "--tail=1"}).out, "world\n");
  EXPECT_EQ(Kubectl({"logs", "pod1", "-c", "main", "--since=1h"}).out, "hello\nworld\n");

  const std::string followed = dir_ + "/followed";
  int follower = SpawnProgram({"sh", "-c", "exec kubectl logs -f pod1 > " + followed},
                              {{"KUBECONFIG", kubeconfig_}, {"HOME", dir_}});
  ASSERT_TRUE(Eventually([&] { return ReadFile(followed) == "hello\nworld\n"; }))
      << ReadFile(followed);
  WriteFile(dir_ + "/out2", "bye\n");
  ASSERT_EQ(Kubectl({"create", "--raw", endpoint + "?finish=true", "-f", dir_ + "/out2"}).exit_code,
            0);
  EXPECT_EQ(ExitCodeOf(follower), 0) << "kubectl logs -f ends with the container";
  EXPECT_EQ(ReadFile(followed), "hello\nworld\nbye\n");
}

// Injected faults as client-go meets them: a 429 with Retry-After is
// retried by kubectl itself; a 500 is its error.
TEST_F(SimKubectlTest, KubectlMeetsInjectedFaults) {
  ASSERT_EQ(Kubectl({"apply", "--validate=false", "-f", dir_ + "/objects.yaml"}).exit_code, 0);
  WriteFile(dir_ + "/throttle.json",
            R"({"verb":"get","resource":"pods","code":429,"retryAfterSeconds":1})");
  ASSERT_EQ(
      Kubectl({"create", "--raw", "/debug/k8shazgpu-sim/faults", "-f", dir_ + "/throttle.json"})
          .exit_code,
      0);
  CliResult throttled = Kubectl({"get", "pod", "pod1", "-o", "name"});
  EXPECT_EQ(throttled.exit_code, 0) << throttled.err;
  EXPECT_EQ(throttled.out, "pod/pod1\n");
  EXPECT_THAT(ReadFile(dir_ + "/server.log"),
              HasSubstr("GET /api/v1/namespaces/default/pods/pod1 429"));

  WriteFile(dir_ + "/fail.json", R"({"verb":"get","resource":"pods","code":500})");
  ASSERT_EQ(Kubectl({"create", "--raw", "/debug/k8shazgpu-sim/faults", "-f", dir_ + "/fail.json"})
                .exit_code,
            0);
  CliResult failed = Kubectl({"get", "pod", "pod1"});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_THAT(failed.err, HasSubstr("InternalError"));
  EXPECT_EQ(Kubectl({"get", "pod", "pod1", "-o", "name"}).out, "pod/pod1\n");  // used up
}

TEST_F(SimKubectlTest, DiscoveryListsTheDraKinds) {
  CliResult resources = Kubectl({"api-resources", "--api-group=resource.k8s.io", "-o", "name"});
  ASSERT_EQ(resources.exit_code, 0) << resources.err;
  for (const char* name :
       {"deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io",
        "resourceclaimtemplates.resource.k8s.io", "resourceslices.resource.k8s.io"}) {
    EXPECT_THAT(resources.out, HasSubstr(name));
  }
  CliResult version = Kubectl({"version", "-o", "json"});
  EXPECT_THAT(version.out, HasSubstr("\"minor\": \"34\""));
}

// NVIDIA's published examples are still v1beta1: a 1.34 server serves
// v1beta1 and v1beta2 beside v1, in their own shapes, over one stored
// object.
TEST_F(SimKubectlTest, OlderDraVersionsAreServedInTheirOwnShapes) {
  WriteFile(dir_ + "/beta.yaml", R"(apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: node1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node1
  pool: {name: node1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes: {index: {int: 0}}
      capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: beta}
spec:
  devices:
    requests: [{name: gpu, deviceClassName: gpu.example.com, count: 2}]
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: beta2}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
)");
  CliResult applied = Kubectl({"apply", "-f", dir_ + "/beta.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;

  // Each version reads the same objects in its own shape; v1 is preferred.
  json v1 = GetJson({"resourceslice", "node1-gpu"});
  EXPECT_EQ(v1["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(v1["spec"]["devices"][0]["attributes"]["index"]["int"], 0);
  json beta = GetJson({"resourceslices.v1beta1.resource.k8s.io", "node1-gpu"});
  EXPECT_EQ(beta["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(beta["spec"]["devices"][0]["basic"]["capacity"]["memory"]["value"], "80Gi");
  EXPECT_EQ(
      GetJson({"resourceclaim", "beta"})["spec"]["devices"]["requests"][0]["exactly"]["count"], 2);
  json claims = GetJson({"resourceclaims.v1beta1.resource.k8s.io"});
  ASSERT_EQ(claims["items"].size(), 2u);
  for (const json& claim : claims["items"]) {
    EXPECT_EQ(claim["apiVersion"], "resource.k8s.io/v1beta1");
    EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["deviceClassName"], "gpu.example.com");
  }
  EXPECT_EQ(GetJson({"resourceclaims.v1beta2.resource.k8s.io",
                     "beta"})["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "gpu.example.com");

  // A patch is written in the version's shape.
  CliResult patched = Kubectl(
      {"patch", "resourceslices.v1beta1.resource.k8s.io", "node1-gpu", "--type=json", "-p",
       R"([{"op": "replace", "path": "/spec/devices/0/basic/attributes/index/int", "value": 5}])"});
  EXPECT_EQ(patched.exit_code, 0) << patched.err;
  EXPECT_EQ(
      GetJson({"resourceslice", "node1-gpu"})["spec"]["devices"][0]["attributes"]["index"]["int"],
      5);

  // Errors name the field where the version has it.
  WriteFile(dir_ + "/bad.yaml", R"(apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: bad}
spec:
  devices:
    requests: [{name: gpu, deviceClassName: gpu.example.com, count: 0}]
)");
  CliResult bad = Kubectl({"apply", "-f", dir_ + "/bad.yaml"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("spec.devices.requests[0].count"));
  EXPECT_THAT(bad.err, Not(HasSubstr("exactly")));
}

// Issue 34: a GPU shared by memory (consumable capacity) - kubectl's own
// validation against the served 1.34 schema accepts the fields, the server
// checks their rules, and kubectl shows them back.
TEST_F(SimKubectlTest, SharedGpuSliceClaimAndShareAreAcceptedCheckedAndShown) {
  WriteFile(dir_ + "/shared.yaml", R"(apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node1-shared
spec:
  driver: gpu.canhazgpu.dev
  nodeName: node1
  pool: {name: node1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    attributes:
      memoryIsolation: {string: none}
    capacity:
      memory:
        value: 80384Mi
        requestPolicy:
          default: 80384Mi
          validRange: {min: 1Mi, max: 80384Mi, step: 1Mi}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: share1
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.canhazgpu.dev
        capacity:
          requests: {memory: 10Gi}
)");
  CliResult apply = Kubectl({"apply", "-f", dir_ + "/shared.yaml"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  const json slice = GetJson({"resourceslice", "node1-shared"});
  EXPECT_EQ(slice["spec"]["devices"][0]["allowMultipleAllocations"], true);
  EXPECT_EQ(
      slice["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["validRange"]["step"],
      "1Mi");
  EXPECT_EQ(GetJson({"resourceclaim", "share1"})["spec"]["devices"]["requests"][0]["exactly"]
                                                ["capacity"]["requests"]["memory"],
            "10Gi");

  // The scheduler's write: a share with its id and consumed capacity.
  const std::string allocation = R"({"status": {"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.canhazgpu.dev", "pool": "node1", "device": "gpu-0",
       "shareID": "SHARE_ID", "consumedCapacity": {"memory": "10Gi"}}]}}}})";
  auto patch = [&](const std::string& id) {
    return Kubectl({"patch", "resourceclaim", "share1", "--subresource=status", "--type=merge",
                    "-p", std::regex_replace(allocation, std::regex("SHARE_ID"), id)});
  };
  CliResult bad_id = patch("share-1");
  EXPECT_NE(bad_id.exit_code, 0);
  EXPECT_THAT(bad_id.err, HasSubstr("status.allocation.devices.results[0].shareID: Invalid value: "
                                    "\"share-1\": must be a lowercase UUID"));
  CliResult good = patch("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const json result =
      GetJson({"resourceclaim", "share1"})["status"]["allocation"]["devices"]["results"][0];
  EXPECT_EQ(result["shareID"], "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
  EXPECT_EQ(result["consumedCapacity"]["memory"], "10Gi");

  // A request policy on a device that cannot be shared is refused.
  WriteFile(dir_ + "/bad.yaml", R"(apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node2-bad
spec:
  driver: gpu.canhazgpu.dev
  nodeName: node2
  pool: {name: node2, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    capacity:
      memory: {value: 80Gi, requestPolicy: {default: 80Gi}}
)");
  CliResult bad = Kubectl({"apply", "-f", dir_ + "/bad.yaml"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("spec.devices[0].capacity[memory].requestPolicy: Forbidden: "
                                 "requires allowMultipleAllocations to be true"));
}

}  // namespace
}  // namespace canhazgpu::testing
