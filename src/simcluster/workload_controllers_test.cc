// The workload controllers on the control plane, against the simulated API
// server over real HTTP: Deployments through ReplicaSets to pods, Jobs
// (Indexed too), DaemonSets. The test plays the kubelet: it reports bound
// pods running and ready, and removes the pods being deleted.
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simcluster/job_controller.h"
#include "simcluster/testing/control_plane_fixture.h"

namespace canhazgpu::simcluster {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

json PodTemplate(json labels, const std::string& restart = "Always") {
  return {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"restartPolicy", restart},
            {"containers", {{{"name", "main"}, {"image", "busybox"}, {"command", {"true"}}}}}}}};
}

class WorkloadControllersTest : public testing::ControlPlaneFixture {
 protected:
  void SetUp() override {
    ControlPlaneFixture::SetUp();
    for (const char* node : {"node-a", "node-b"}) AddNode(node);
    StartPlane();
  }

  json Create(const kube::ResourceRef& ref, json object) {
    auto created = client_->CreateObject(ref, "default", object);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.value_or(json());
  }

  std::vector<json> Pods() {
    auto list = client_->List(kube::kPods, "default");
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? (*list)["items"].get<std::vector<json>>() : std::vector<json>{};
  }
  std::vector<json> PodsOf(const std::string& owner_name) {
    std::vector<json> out;
    for (const json& pod : Pods()) {
      for (const json& ref : pod.value("/metadata/ownerReferences"_json_pointer, json::array()))
        if (ref.value("name", "") == owner_name) out.push_back(pod);
    }
    return out;
  }

  // One round of the kubelet's part: bound pods start and are ready (with
  // `phase` for a pod that runs to its end), pods being deleted go.
  void PlayKubelet(const std::string& finish_as = "") {
    for (const json& pod : Pods()) {
      const std::string name = pod["metadata"]["name"];
      if (pod.contains("/metadata/deletionTimestamp"_json_pointer)) {
        KubeletRemoves(name);
      } else if (pod.contains("/spec/nodeName"_json_pointer) &&
                 pod.value("/status/phase"_json_pointer, std::string()) == "Pending") {
        if (finish_as.empty()) {
          SetPhase(name, "Running", true);
        } else {
          SetPhase(name, finish_as);
        }
      }
    }
  }

  // Plays the kubelet until `done` holds for the object.
  json RunUntil(const kube::ResourceRef& ref, const std::string& name,
                const std::function<bool(const json&)>& done, const std::string& finish_as = "") {
    return WaitFor(ref, name, [&](const json& object) {
      if (done(object)) return true;
      PlayKubelet(finish_as);
      return false;
    });
  }

  static bool ConditionTrue(const json& object, const std::string& type,
                            const std::string& reason = "") {
    for (const json& c : object.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == type && c.value("status", "") == "True" &&
          (reason.empty() || c.value("reason", "") == reason)) {
        return true;
      }
    }
    return false;
  }
};

json Deployment(const std::string& name, int replicas, json pod_template) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", pod_template}}}};
}

// What `kubectl rollout status` waits for.
bool RolledOut(const json& d, int replicas) {
  const json status = d.value("status", json::object());
  return status.value("observedGeneration", 0) >= d["metadata"].value("generation", 1) &&
         status.value("updatedReplicas", 0) == replicas &&
         status.value("replicas", 0) == replicas &&
         status.value("availableReplicas", 0) == replicas;
}

TEST_F(WorkloadControllersTest, ADeploymentRunsItsReplicasThroughAReplicaSet) {
  Create(kDeployments, Deployment("web", 3, PodTemplate({{"app", "web"}})));
  json d = RunUntil(kDeployments, "web", [](const json& d) { return RolledOut(d, 3); });
  EXPECT_TRUE(ConditionTrue(d, "Available", "MinimumReplicasAvailable"));
  EXPECT_TRUE(ConditionTrue(d, "Progressing", "NewReplicaSetAvailable"));

  auto replica_sets = client_->List(kReplicaSets, "default");
  ASSERT_TRUE(replica_sets.ok());
  ASSERT_EQ((*replica_sets)["items"].size(), 1u);
  const json rs = (*replica_sets)["items"][0];
  const std::string hash = rs["metadata"]["labels"]["pod-template-hash"];
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"]["pod-template-hash"], hash);
  EXPECT_EQ(rs["status"]["availableReplicas"], 3);
  std::vector<json> pods = PodsOf(rs["metadata"]["name"]);
  ASSERT_EQ(pods.size(), 3u);
  std::set<std::string> nodes;
  for (const json& pod : pods) {
    EXPECT_EQ(pod["metadata"]["labels"]["app"], "web");
    EXPECT_EQ(pod["metadata"]["labels"]["pod-template-hash"], hash);
    nodes.insert(pod["spec"].value("nodeName", ""));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node-a", "node-b"})) << "pods spread over the nodes";

  // Scaled down: the extra pods are deleted.
  d["spec"]["replicas"] = 1;
  ASSERT_TRUE(client_->Update(kDeployments, "default", d).ok());
  RunUntil(kDeployments, "web", [](const json& d) { return RolledOut(d, 1); });
  size_t left = 0;
  for (const json& pod : PodsOf(rs["metadata"]["name"]))
    left += pod.contains("/metadata/deletionTimestamp"_json_pointer) ? 0 : 1;
  EXPECT_EQ(left, 1u);
}

TEST_F(WorkloadControllersTest, ANewTemplateRollsOutWithoutLosingAvailability) {
  Create(kDeployments, Deployment("web", 2, PodTemplate({{"app", "web"}})));
  json d = RunUntil(kDeployments, "web", [](const json& d) { return RolledOut(d, 2); });
  d["spec"]["template"]["metadata"]["annotations"] = {{"restartedAt", "now"}};
  ASSERT_TRUE(client_->Update(kDeployments, "default", d).ok());
  // Each step of the rollout keeps two pods available (maxUnavailable 25%
  // of 2 rounds down to 0) and runs at most three (maxSurge rounds up to 1).
  size_t most_pods = 0;
  WaitFor(kDeployments, "web", [&](const json& d) {
    size_t running = 0;
    for (const json& pod : Pods())
      running += pod.contains("/metadata/deletionTimestamp"_json_pointer) ? 0 : 1;
    most_pods = std::max(most_pods, running);
    if (RolledOut(d, 2) && d["status"].value("observedGeneration", 0) == 2) return true;
    PlayKubelet();
    return false;
  });
  EXPECT_LE(most_pods, 3u);
  auto replica_sets = client_->List(kReplicaSets, "default");
  ASSERT_TRUE(replica_sets.ok());
  std::vector<std::pair<std::string, int>> revisions;
  for (const json& rs : (*replica_sets)["items"]) {
    revisions.emplace_back(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
                           rs["spec"]["replicas"].get<int>());
  }
  EXPECT_THAT(revisions, UnorderedElementsAre(std::pair<std::string, int>{"1", 0},
                                              std::pair<std::string, int>{"2", 2}));
}

TEST_F(WorkloadControllersTest, DeletingADeploymentCollectsItsReplicaSetsAndPods) {
  Create(kDeployments, Deployment("web", 2, PodTemplate({{"app", "web"}})));
  RunUntil(kDeployments, "web", [](const json& d) { return RolledOut(d, 2); });
  ASSERT_TRUE(client_->Delete(kDeployments, "default", "web", {.propagation = "Background"}).ok());
  WaitFor(kube::kPods, "", [&](const json&) {
    PlayKubelet();
    auto rs = client_->List(kReplicaSets, "default");
    return Pods().empty() && rs.ok() && (*rs)["items"].empty();
  });
}

TEST_F(WorkloadControllersTest, AnIndexedJobRunsEachIndexOnceAndCompletes) {
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "train"}}},
              {"spec",
               {{"completions", 3},
                {"parallelism", 2},
                {"completionMode", "Indexed"},
                {"template", PodTemplate(json::object(), "Never")}}}};
  Create(kJobs, job);
  WaitFor(kJobs, "train",
          [](const json& j) { return j.value("/status/active"_json_pointer, 0) == 2; });
  std::vector<json> pods = PodsOf("train");
  ASSERT_EQ(pods.size(), 2u);
  std::set<std::string> indexes;
  for (const json& pod : pods) {
    const std::string index = pod["metadata"]["annotations"][kJobCompletionIndex];
    indexes.insert(index);
    EXPECT_EQ(pod["metadata"]["labels"][kJobCompletionIndex], index);
    EXPECT_EQ(pod["spec"]["hostname"], "train-" + index);
    EXPECT_EQ(pod["metadata"]["generateName"], "train-" + index + "-");
    EXPECT_EQ(pod["metadata"]["labels"]["batch.kubernetes.io/job-name"], "train");
    EXPECT_EQ(pod["spec"]["containers"][0]["env"][0],
              json::parse(R"({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef":
                {"apiVersion": "v1",
                 "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})"));
  }
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "1"})) << "lowest indexes first";

  json done = RunUntil(
      kJobs, "train", [](const json& j) { return ConditionTrue(j, "Complete"); }, "Succeeded");
  EXPECT_TRUE(ConditionTrue(done, "SuccessCriteriaMet"));
  EXPECT_EQ(done["status"]["completedIndexes"], "0-2");
  EXPECT_EQ(done["status"]["succeeded"], 3);
  EXPECT_EQ(done["status"]["active"], 0);
  EXPECT_TRUE(done["status"].contains("completionTime"));
  EXPECT_EQ(PodsOf("train").size(), 3u) << "one pod per index, none again";
}

TEST_F(WorkloadControllersTest, AJobFailsPastItsBackoffLimit) {
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "flaky"}}},
              {"spec", {{"backoffLimit", 1}, {"template", PodTemplate(json::object(), "Never")}}}};
  Create(kJobs, job);
  json failed = RunUntil(
      kJobs, "flaky", [](const json& j) { return ConditionTrue(j, "Failed"); }, "Failed");
  EXPECT_TRUE(ConditionTrue(failed, "Failed", "BackoffLimitExceeded"));
  EXPECT_TRUE(ConditionTrue(failed, "FailureTarget", "BackoffLimitExceeded"));
  EXPECT_EQ(failed["status"]["failed"], 2);
  EXPECT_EQ(PodsOf("flaky").size(), 2u) << "no pod after the limit";
}

TEST_F(WorkloadControllersTest, ADaemonSetRunsOnePodOnEveryNodeItMayRunOn) {
  AddNode("node-c", {{"gpu", "none"}});
  AddNode("node-t", json::object(), true,
          {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}});
  json ds = {{"apiVersion", "apps/v1"},
             {"kind", "DaemonSet"},
             {"metadata", {{"name", "agent"}}},
             {"spec",
              {{"selector", {{"matchLabels", {{"app", "agent"}}}}},
               {"template", PodTemplate({{"app", "agent"}})}}}};
  // Not on node-c: a node affinity the daemon's template asks for.
  ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
        json::parse(R"([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}])");
  Create(kDaemonSets, ds);
  json running = RunUntil(kDaemonSets, "agent", [](const json& d) {
    return d.value("/status/numberReady"_json_pointer, 0) == 2;
  });
  EXPECT_EQ(running["status"]["desiredNumberScheduled"], 2);
  EXPECT_EQ(running["status"]["updatedNumberScheduled"], 2);
  std::multiset<std::string> nodes;
  for (const json& pod : PodsOf("agent")) nodes.insert(pod["spec"].value("nodeName", ""));
  EXPECT_THAT(nodes, ElementsAre("node-a", "node-b")) << "not on node-c (affinity), node-t (taint)";

  // A new node gets its daemon.
  AddNode("node-d");
  RunUntil(kDaemonSets, "agent",
           [](const json& d) { return d.value("/status/numberReady"_json_pointer, 0) == 3; });
  // A new template replaces every daemon.
  json current = Get(kDaemonSets, "agent");
  current["spec"]["template"]["metadata"]["annotations"] = {{"v", "2"}};
  ASSERT_TRUE(client_->Update(kDaemonSets, "default", current).ok());
  json updated = RunUntil(kDaemonSets, "agent", [](const json& d) {
    return d.value("/status/observedGeneration"_json_pointer, 0) == 2 &&
           d.value("/status/updatedNumberScheduled"_json_pointer, 0) == 3 &&
           d.value("/status/numberReady"_json_pointer, 0) == 3;
  });
  std::set<std::string> hashes;
  for (const json& pod : PodsOf("agent")) {
    if (!pod.contains("/metadata/deletionTimestamp"_json_pointer))
      hashes.insert(pod["metadata"]["labels"]["controller-revision-hash"]);
  }
  EXPECT_EQ(hashes.size(), 1u);
}

}  // namespace
}  // namespace canhazgpu::simcluster
