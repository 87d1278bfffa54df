#include "kubesim/table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

const TimePoint kNow = FromEpochMillis(1'795'497'600'000);  // 2026-11-24T05:20:00Z

ResourceType Type(const std::string& group, const std::string& resource) {
  return {.group = group, .version = group.empty() ? "v1" : "v1alpha1", .resource = resource};
}

json Pod(const std::string& name, json status) {
  return {{"metadata", {{"name", name}, {"creationTimestamp", "2026-11-24T05:16:40Z"}}},
          {"spec", {{"nodeName", "node-0"}, {"containers", {{{"name", "c"}}}}}},
          {"status", std::move(status)}};
}

TEST(TableTest, KubectlsAges) {
  using std::chrono::seconds;
  EXPECT_EQ(HumanAge(seconds(45)), "45s");
  EXPECT_EQ(HumanAge(seconds(119)), "119s");
  EXPECT_EQ(HumanAge(seconds(200)), "3m20s");
  EXPECT_EQ(HumanAge(seconds(300)), "5m");
  EXPECT_EQ(HumanAge(seconds(3600 * 2 + 60 * 5)), "125m");
  EXPECT_EQ(HumanAge(seconds(3600 * 4 + 60 * 5)), "4h5m");
  EXPECT_EQ(HumanAge(seconds(3600 * 20)), "20h");
  EXPECT_EQ(HumanAge(seconds(86400 * 3 + 3600)), "3d1h");
  EXPECT_EQ(HumanAge(seconds(86400 * 40)), "40d");
  EXPECT_EQ(HumanAge(seconds(86400 * (365 * 3 + 10))), "3y10d");
  EXPECT_EQ(HumanAge(seconds(-5)), "0s");
}

TEST(TableTest, OnlyAnAcceptThatAsksForATableFirstGetsOne) {
  EXPECT_TRUE(
      WantsTable("application/json;as=Table;v=v1;g=meta.k8s.io,application/"
                 "json;as=Table;v=v1beta1;g=meta.k8s.io,"
                 "application/json"));
  EXPECT_FALSE(WantsTable("application/json"));
  EXPECT_FALSE(WantsTable(""));
  EXPECT_FALSE(WantsTable("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"));
}

TEST(TableTest, PodsShowReadinessStatusRestartsAgeAndWideColumns) {
  const json running = Pod(
      "a", {{"phase", "Running"},
            {"podIP", "10.0.0.7"},
            {"containerStatuses",
             {{{"ready", true}, {"restartCount", 2}, {"state", {{"running", json::object()}}}}}}});
  const json failed =
      Pod("b", {{"phase", "Failed"},
                {"containerStatuses",
                 {{{"ready", false}, {"state", {{"terminated", {{"exitCode", 3}}}}}}}}});
  json deleting = Pod("c", {{"phase", "Running"}});
  deleting["metadata"]["deletionTimestamp"] = "2026-11-24T05:20:30Z";
  const json waiting =
      Pod("d",
          {{"phase", "Pending"},
           {"containerStatuses", {{{"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}}}}});
  const json list = {{"metadata", {{"resourceVersion", "42"}}},
                     {"items", {running, failed, deleting, waiting}}};
  const json table = ToTable(Type("", "pods"), list, nullptr, "", kNow);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"]["resourceVersion"], "42");
  std::vector<std::string> names;
  for (const json& c : table["columnDefinitions"]) names.push_back(c["name"]);
  EXPECT_THAT(names,
              ::testing::ElementsAre("Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"));
  EXPECT_EQ(table["columnDefinitions"][5]["priority"], 1);  // -o wide
  EXPECT_EQ(table["rows"][0]["cells"],
            json({"a", "1/1", "Running", 2, "3m20s", "10.0.0.7", "node-0"}));
  EXPECT_EQ(table["rows"][1]["cells"][2], "ExitCode:3");
  EXPECT_EQ(table["rows"][2]["cells"][2], "Terminating");
  EXPECT_EQ(table["rows"][3]["cells"][2], "ContainerCreating");
  EXPECT_EQ(table["rows"][3]["cells"][5], "<none>");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(table["rows"][0]["object"]["metadata"]["name"], "a");
  EXPECT_FALSE(table["rows"][0]["object"].contains("status"));
}

TEST(TableTest, CustomResourcesUseTheirPrinterColumnsAndOthersNameAndAge) {
  const json crd = {
      {"spec",
       {{"versions",
         {{{"name", "v1alpha1"},
           {"additionalPrinterColumns",
            {{{"name", "Free"}, {"type", "integer"}, {"jsonPath", ".status.summary.free"}},
             {{"name", "Age"},
              {"type", "date"},
              {"jsonPath", ".metadata.creationTimestamp"}}}}}}}}}};
  const json status = {
      {"metadata", {{"name", "node-0"}, {"creationTimestamp", "2026-11-24T05:16:40Z"}}},
      {"status", {{"summary", {{"free", 3}}}}}};
  const json custom =
      ToTable(Type("canhazgpu.dev", "nodegpustatuses"), status, crd, "Object", kNow);
  ASSERT_EQ(custom["columnDefinitions"].size(), 3u);  // Name, Free, Age: no second Age
  EXPECT_EQ(custom["rows"][0]["cells"], json({"node-0", 3, "3m20s"}));
  EXPECT_EQ(custom["rows"][0]["object"], status);  // includeObject=Object

  const json plain =
      ToTable(Type("resource.k8s.io", "deviceclasses"), status, nullptr, "None", kNow);
  ASSERT_EQ(plain["columnDefinitions"].size(), 2u);
  EXPECT_EQ(plain["rows"][0]["cells"], json({"node-0", "3m20s"}));
  EXPECT_FALSE(plain["rows"][0].contains("object"));
}

std::vector<std::string> ColumnNames(const json& table) {
  std::vector<std::string> names;
  for (const json& c : table["columnDefinitions"]) names.push_back(c["name"]);
  return names;
}

// Issue 30: `kubectl get` showed NAME and AGE only for these kinds.
TEST(TableTest, DraKindsNodesAndDaemonSetsHaveTheServersColumns) {
  const json created = {{"creationTimestamp", "2026-11-24T05:16:40Z"}};
  json claim = {{"metadata", created}};
  claim["metadata"]["name"] = "train";
  const ResourceType claims{
      .group = "resource.k8s.io", .version = "v1", .resource = "resourceclaims"};
  json table = ToTable(claims, claim, nullptr, "None", kNow);
  EXPECT_THAT(ColumnNames(table), ::testing::ElementsAre("Name", "State", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], json({"train", "pending", "3m20s"}));
  claim["status"] = {{"allocation", json::object()},
                     {"reservedFor", {{{"resource", "pods"}, {"name", "p"}}}}};
  EXPECT_EQ(ToTable(claims, claim, nullptr, "None", kNow)["rows"][0]["cells"][1],
            "allocated,reserved");
  claim["metadata"]["deletionTimestamp"] = "2026-11-24T05:19:00Z";
  claim["status"].erase("reservedFor");
  EXPECT_EQ(ToTable(claims, claim, nullptr, "None", kNow)["rows"][0]["cells"][1],
            "deleted,allocated");

  json slice = {
      {"metadata", created},
      {"spec",
       {{"nodeName", "node-0"}, {"driver", "gpu.canhazgpu.dev"}, {"pool", {{"name", "node-0"}}}}}};
  slice["metadata"]["name"] = "node-0-gpu";
  table = ToTable({.group = "resource.k8s.io", .version = "v1", .resource = "resourceslices"},
                  slice, nullptr, "None", kNow);
  EXPECT_THAT(ColumnNames(table), ::testing::ElementsAre("Name", "Node", "Driver", "Pool", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"],
            json({"node-0-gpu", "node-0", "gpu.canhazgpu.dev", "node-0", "3m20s"}));

  json node = {{"metadata", created},
               {"spec", {{"unschedulable", true}}},
               {"status",
                {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                 {"nodeInfo", {{"kubeletVersion", "v1.34.0"}}}}}};
  node["metadata"]["name"] = "node-0";
  node["metadata"]["labels"] = {{"node-role.kubernetes.io/gpu", ""}, {"zone", "a"}};
  table = ToTable({.group = "", .version = "v1", .resource = "nodes"}, node, nullptr, "None", kNow);
  EXPECT_THAT(ColumnNames(table),
              ::testing::ElementsAre("Name", "Status", "Roles", "Age", "Version"));
  EXPECT_EQ(table["rows"][0]["cells"],
            json({"node-0", "Ready,SchedulingDisabled", "gpu", "3m20s", "v1.34.0"}));

  json daemonset = {
      {"metadata", created},
      {"spec", {{"template", {{"spec", {{"nodeSelector", {{"canhazgpu.dev/gpu", "true"}}}}}}}}},
      {"status",
       {{"desiredNumberScheduled", 2},
        {"currentNumberScheduled", 2},
        {"numberReady", 1},
        {"updatedNumberScheduled", 2},
        {"numberAvailable", 1}}}};
  daemonset["metadata"]["name"] = "k8shazgpu-node";
  table = ToTable({.group = "apps", .version = "v1", .resource = "daemonsets"}, daemonset, nullptr,
                  "None", kNow);
  EXPECT_THAT(ColumnNames(table),
              ::testing::ElementsAre("Name", "Desired", "Current", "Ready", "Up-to-date",
                                     "Available", "Node Selector", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"],
            json({"k8shazgpu-node", 2, 2, 1, 2, 1, "canhazgpu.dev/gpu=true", "3m20s"}));
}

TEST(TableTest, DeploymentsReplicaSetsAndJobsHaveTheServersColumns) {
  const json created = {{"name", "web"}, {"creationTimestamp", "2026-11-24T05:16:40Z"}};
  json deployment = {
      {"metadata", created},
      {"spec", {{"replicas", 3}}},
      {"status", {{"readyReplicas", 2}, {"updatedReplicas", 3}, {"availableReplicas", 2}}}};
  json table = ToTable({.group = "apps", .version = "v1", .resource = "deployments"}, deployment,
                       nullptr, "None", kNow);
  EXPECT_THAT(ColumnNames(table),
              ::testing::ElementsAre("Name", "Ready", "Up-to-date", "Available", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], json({"web", "2/3", 3, 2, "3m20s"}));

  json rs = {{"metadata", created},
             {"spec", {{"replicas", 3}}},
             {"status", {{"replicas", 2}, {"readyReplicas", 1}}}};
  table = ToTable({.group = "apps", .version = "v1", .resource = "replicasets"}, rs, nullptr,
                  "None", kNow);
  EXPECT_THAT(ColumnNames(table),
              ::testing::ElementsAre("Name", "Desired", "Current", "Ready", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], json({"web", 3, 2, 1, "3m20s"}));

  const ResourceType jobs{.group = "batch", .version = "v1", .resource = "jobs"};
  json job = {{"metadata", created},
              {"spec", {{"completions", 3}}},
              {"status", {{"succeeded", 1}, {"startTime", "2026-11-24T05:18:00Z"}}}};
  table = ToTable(jobs, job, nullptr, "None", kNow);
  EXPECT_THAT(ColumnNames(table),
              ::testing::ElementsAre("Name", "Status", "Completions", "Duration", "Age"));
  EXPECT_EQ(table["rows"][0]["cells"], json({"web", "Running", "1/3", "2m", "3m20s"}));
  job["status"]["succeeded"] = 3;
  job["status"]["completionTime"] = "2026-11-24T05:18:30Z";
  job["status"]["conditions"] = {{{"type", "SuccessCriteriaMet"}, {"status", "True"}},
                                 {{"type", "Complete"}, {"status", "True"}}};
  EXPECT_EQ(ToTable(jobs, job, nullptr, "None", kNow)["rows"][0]["cells"],
            json({"web", "Complete", "3/3", "30s", "3m20s"}));
  job["spec"] = {{"parallelism", 4}};
  job["status"] = {{"succeeded", 0}};
  EXPECT_EQ(ToTable(jobs, job, nullptr, "None", kNow)["rows"][0]["cells"],
            json({"web", "Running", "0/1 of 4", "", "3m20s"}));
}

}  // namespace
}  // namespace canhazgpu::kubesim
