// The objects of a multi-node run: the Indexed Job and the headless Service
// validate against Kubernetes 1.34's schemas, and the ranks' entry script,
// run by a real shell, counts the devices the claim holds.
#include "cli/k8shazgpu/gang_objects.h"

#include <stdio.h>

#include <filesystem>
#include <fstream>

#include "cli/k8shazgpu/testing/schema_refusals.h"
#include "core/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

const RunNames kGangNames{.run_id = "abcde12345",
                          .user = "alice",
                          .pod = "alice-abcde",
                          .claim = "alice-abcde-gpus-abcde"};

RunRequest TwoGpus() {
  RunRequest r;
  r.gpus = 2;
  r.image = "python:3.12-slim";
  r.argv = {"torchrun", "train.py", "--lr=$(LR)"};
  r.env = {{"LR", "0.1"}};
  return r;
}

// The value of env var `name` in the rank template, or null.
json EnvValue(const json& job, const std::string& name) {
  for (const json& e : job["spec"]["template"]["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e.contains("value") ? e["value"] : e["valueFrom"];
  return nullptr;
}

TEST(GangObjectsTest, JobAndServiceValidateAndSayTheGang) {
  const json job =
      GangJobObject(TwoGpus(), kGangNames, {.nodes = 3}, PodObject(TwoGpus(), kGangNames));
  EXPECT_THAT(Refusals(job), IsEmpty()) << job.dump(2);
  const json service = GangServiceObject(kGangNames);
  EXPECT_THAT(Refusals(service), IsEmpty()) << service.dump(2);
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["selector"]["canhazgpu.dev/run"], "abcde12345");

  const json& spec = job["spec"];
  EXPECT_EQ(spec["completionMode"], "Indexed");
  EXPECT_EQ(spec["completions"], 3);
  EXPECT_EQ(spec["parallelism"], 3);
  EXPECT_EQ(spec["backoffLimit"], 0);
  EXPECT_FALSE(spec.contains("suspend"));
  const json& pod = spec["template"]["spec"];
  EXPECT_EQ(pod["subdomain"], "alice-abcde");
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["schedulingGates"], json::parse(R"([{"name": "canhazgpu.dev/gang"}])"));
  EXPECT_EQ(pod["resourceClaims"][0]["resourceClaimTemplateName"], "alice-abcde-gpus-abcde");
  const json& anti =
      pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
  EXPECT_EQ(anti["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(anti["labelSelector"]["matchLabels"]["canhazgpu.dev/run"], "abcde12345");
  EXPECT_EQ(spec["template"]["metadata"]["labels"]["canhazgpu.dev/user"], "alice");
}

TEST(GangObjectsTest, RanksGetTorchrunSkypilotAndDstackNames) {
  const json job = GangJobObject(TwoGpus(), kGangNames, {.nodes = 2, .master_port = 29400},
                                 PodObject(TwoGpus(), kGangNames));
  const json& env = job["spec"]["template"]["spec"]["containers"][0]["env"];
  EXPECT_EQ(env[0]["name"], "JOB_COMPLETION_INDEX");  // first: the others expand it
  EXPECT_EQ(EnvValue(job, "MASTER_ADDR"), "alice-abcde-0.alice-abcde");
  EXPECT_EQ(EnvValue(job, "MASTER_PORT"), "29400");
  EXPECT_EQ(EnvValue(job, "NNODES"), "2");
  EXPECT_EQ(EnvValue(job, "NODE_RANK"), "$(JOB_COMPLETION_INDEX)");
  EXPECT_EQ(EnvValue(job, "SKYPILOT_NODE_RANK"), "$(JOB_COMPLETION_INDEX)");
  EXPECT_EQ(EnvValue(job, "DSTACK_NODE_RANK"), "$(JOB_COMPLETION_INDEX)");
  EXPECT_EQ(EnvValue(job, "SKYPILOT_NODE_IPS"),
            "alice-abcde-0.alice-abcde\nalice-abcde-1.alice-abcde");
  EXPECT_EQ(EnvValue(job, "DSTACK_MASTER_NODE_IP"), "alice-abcde-0.alice-abcde");
  EXPECT_EQ(EnvValue(job, "DSTACK_NODES_NUM"), "2");
  // The user's own variables come last (theirs win) and keep their dollars.
  EXPECT_EQ(env.back(), json::parse(R"({"name": "LR", "value": "0.1"})"));
  const json& command = job["spec"]["template"]["spec"]["containers"][0]["command"];
  EXPECT_EQ(command[0], "sh");
  EXPECT_EQ(command[3], "k8shazgpu-rank");
  EXPECT_EQ(command[4], "torchrun");
  EXPECT_EQ(command[6], "--lr=$$(LR)");
}

TEST(GangObjectsTest, TimeoutTtlAndKueueAreTheJobs) {
  RunRequest r = TwoGpus();
  r.timeout_seconds = 600;
  r.ttl_seconds = 3600;
  r.note = "sweep 3";
  const json job =
      GangJobObject(r, kGangNames, {.nodes = 2, .gated = false, .kueue_queue = "team-a"},
                    PodObject(r, kGangNames));
  EXPECT_THAT(Refusals(job), IsEmpty()) << job.dump(2);
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 600);
  EXPECT_EQ(job["spec"]["ttlSecondsAfterFinished"], 3600);
  EXPECT_EQ(job["spec"]["suspend"], true);
  EXPECT_EQ(job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "team-a");
  EXPECT_EQ(job["metadata"]["annotations"]["canhazgpu.dev/note"], "sweep 3");
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_FALSE(pod.contains("activeDeadlineSeconds"));
  EXPECT_FALSE(pod.contains("schedulingGates"));
  EXPECT_FALSE(job["spec"]["template"]["metadata"]
                   .value("annotations", json::object())
                   .contains("canhazgpu.dev/ttl-seconds-after-finished"));
}

// The cluster's own gang scheduling: every rank names the run's PodGroup,
// which asks for all N at once and goes with the Job.
TEST(GangObjectsTest, ThePodGroupPathNamesTheGroupInsteadOfAGate) {
  const json job =
      GangJobObject(TwoGpus(), kGangNames, {.nodes = 2, .gated = false, .pod_group = "alice-abcde"},
                    PodObject(TwoGpus(), kGangNames));
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_FALSE(pod.contains("schedulingGates"));
  EXPECT_EQ(pod["schedulingGroup"], json({{"podGroupName", "alice-abcde"}}));

  const json created_job = {{"metadata", {{"name", "alice-abcde"}, {"uid", "u-1"}}}};
  for (const char* version : {"v1beta1", "v1alpha2"}) {
    kube::ResourceRef ref = kube::kPodGroups;
    ref.version = version;
    const json group = GangPodGroupObject(kGangNames, ref, 2, created_job);
    EXPECT_EQ(group["apiVersion"], StrCat("scheduling.k8s.io/", version));
    EXPECT_EQ(group["kind"], "PodGroup");
    EXPECT_EQ(group["metadata"]["name"], "alice-abcde");
    EXPECT_EQ(group["metadata"]["labels"]["canhazgpu.dev/run"], "abcde12345");
    EXPECT_EQ(group["metadata"]["ownerReferences"][0]["uid"], "u-1");
    EXPECT_EQ(group["metadata"]["ownerReferences"][0]["kind"], "Job");
    EXPECT_EQ(group["spec"], json::parse(R"({"schedulingPolicy": {"gang": {"minCount": 2}}})"));
  }
}

// The entry script as the kubelet hands it to the container's shell ("$$"
// is Kubernetes' escape for "$"), run with `visible` as the CDI env.
std::string RunEntryScript(const json& job, const std::string& visible) {
  std::string script = job["spec"]["template"]["spec"]["containers"][0]["command"][2];
  for (size_t at = 0; (at = script.find("$$", at)) != std::string::npos; ++at) script.erase(at, 1);
  const std::string path = ::testing::TempDir() + "/entry.sh";
  std::ofstream(path) << script;
  const std::string line =
      StrCat("NVIDIA_VISIBLE_DEVICES='", visible, "' sh -c \"$(cat ", path, ")\"",
             " k8shazgpu-rank sh -c 'echo $NPROC_PER_NODE $WORLD_SIZE "
             "$DSTACK_GPUS_PER_NODE $0' done");
  FILE* p = popen(line.c_str(), "r");
  std::string out;
  char buffer[256];
  while (p != nullptr && fgets(buffer, sizeof buffer, p) != nullptr) out += buffer;
  if (p != nullptr) pclose(p);
  return out;
}

TEST(GangObjectsTest, EntryScriptCountsTheDevicesTheClaimHolds) {
  const json job =
      GangJobObject(TwoGpus(), kGangNames, {.nodes = 3}, PodObject(TwoGpus(), kGangNames));
  EXPECT_EQ(RunEntryScript(job, "GPU-a,GPU-b"), "2 6 2 done\n");
  EXPECT_EQ(RunEntryScript(job, "MIG-1,MIG-2,MIG-3"), "3 9 3 done\n");
  // Nothing in the environment (NVIDIA's driver says "void") and no GPU
  // device nodes here: the claim's count.
  if (!std::filesystem::exists("/dev/nvidia0")) {
    EXPECT_EQ(RunEntryScript(job, "void"), "2 6 2 done\n");
  }
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
