#include "cacheplan/types.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cacheplan {
namespace {

using nlohmann::json;

CachePlan FullPlan() {
  CachePlan plan;
  plan.name = "default";
  plan.items = {
      {.name = "vllm-image",
       .type = kImage,
       .image = ImageSource{.ref = "vllm/vllm-openai:v0.6.3"}},
      {.name = "vllm-repo",
       .type = kGitRepo,
       .git_repo = GitRepoSource{.url = "https://github.com/vllm-project/vllm", .branch = "main"},
       .node_selector = {{"gpu", "h100"}},
       .pull_secret = SecretRef{.namespace_name = "ml", .name = "git-token"},
       .refresh_requested_at = "2026-11-24T10:00:00Z"},
      {.name = "qwen",
       .type = kHfModel,
       .hf_model = HfModelSource{.repo_id = "Qwen/Qwen2.5-0.5B",
                                 .revision = "main",
                                 .allow_patterns = {"*.json", "*.safetensors"}}},
  };
  plan.status = PlanStatus{
      .summary = {.items = 3, .nodes = 2, .ready = 4, .pulling = 1, .failed = 1, .pending = 0},
      .conditions = {{.type = "Ready",
                      .status = "False",
                      .reason = "ItemsFailed",
                      .message = "1 of 6 failed",
                      .last_transition_time = "2026-11-24T10:00:00Z"}}};
  return plan;
}

TEST(TypesTest, PlanRoundTripsThroughJson) {
  const CachePlan plan = FullPlan();
  const json j = PlanToJson(plan);
  EXPECT_EQ(j["apiVersion"], "canhazgpu.dev/v1alpha1");
  EXPECT_EQ(j["kind"], "CachePlan");
  EXPECT_EQ(j["spec"]["items"][1]["scope"]["nodeSelector"]["gpu"], "h100");
  EXPECT_EQ(j["spec"]["items"][1]["pullSecretRef"]["namespace"], "ml");
  EXPECT_EQ(j["spec"]["items"][2]["hfModel"]["allowPatterns"][1], "*.safetensors");
  absl::StatusOr<CachePlan> back = PlanFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, plan);
}

TEST(TypesTest, WritingEmitsOnlyWhatIsSet) {
  const CacheItem item{.name = "x", .type = kImage, .image = ImageSource{.ref = "nginx"}};
  EXPECT_EQ(ItemToJson(item),
            (json{{"name", "x"}, {"type", "image"}, {"image", {{"ref", "nginx"}}}}));
  const CacheItem repo{
      .name = "r", .type = kGitRepo, .git_repo = GitRepoSource{.url = "file:///r"}};
  EXPECT_EQ(ItemToJson(repo)["gitRepo"], (json{{"url", "file:///r"}}));
}

// Fields a newer writer added are kept; a field of the wrong type is an
// error naming it, not a value read as absent (issue 32, item 3).
TEST(TypesTest, ReadingKeepsUnknownFieldsAndNamesMistypedOnes) {
  const json j = json::parse(R"({
    "metadata": {"name": "p", "resourceVersion": "42", "labels": {"a": "b"}},
    "spec": {"future": true, "items": [
      {"name": "a", "type": "image", "image": {"ref": "nginx", "platform": "arm64"}, "extra": 1},
      {"name": "b", "type": "gitRepo", "gitRepo": {"url": "https://x/r", "branch": "dev"}}
    ]},
    "status": {"summary": {"items": 2, "later": 1}, "conditions": []}
  })");
  absl::StatusOr<CachePlan> plan = PlanFromJson(j);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->resource_version, "42");
  ASSERT_EQ(plan->items.size(), 2u);
  EXPECT_EQ(plan->items[0].image->ref, "nginx");
  EXPECT_EQ(plan->items[1].git_repo->branch, "dev");
  EXPECT_EQ(plan->status->summary.items, 2);
  absl::StatusOr<CachePlanObject> object = CachePlanObject::FromJson(j);
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(object->ToJson(), j);

  auto mistyped = [&](const char* pointer, const json& value) {
    json bad = j;
    bad[json::json_pointer(pointer)] = value;
    return std::string(PlanFromJson(bad).status().message());
  };
  EXPECT_EQ(mistyped("/spec/items/1/gitRepo/url", 5),
            "CachePlan p: spec.items[1].gitRepo.url: expected a string, got number");
  EXPECT_EQ(mistyped("/status/summary/items", "two"),
            "CachePlan p: status.summary.items: expected an integer, got string");
  EXPECT_EQ(mistyped("/status/conditions", "none"),
            "CachePlan p: status.conditions: expected a list, got string");
  EXPECT_EQ(
      std::string(NodeStatusFromJson(json::parse(R"({"status": {"items": [{"bytesDone": "1"}]}})"))
                      .status()
                      .message()),
      "NodeCacheStatus: status.items[0].bytesDone: expected an integer, got string");
}

TEST(TypesTest, ReadingRefusesItemsThatAreNotObjects) {
  EXPECT_FALSE(PlanFromJson(json{{"metadata", {{"name", "p"}}}, {"spec", {{"items", {1}}}}}).ok());
  EXPECT_FALSE(PlanFromJson(json{{"spec", {{"items", "x"}}}}).ok());
  EXPECT_FALSE(PlanFromJson(json::array()).ok());
  // No spec at all is an empty plan.
  absl::StatusOr<CachePlan> empty = PlanFromJson(json{{"metadata", {{"name", "p"}}}});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->items.empty());
}

TEST(TypesTest, NodeStatusRoundTripsThroughJson) {
  NodeCacheStatus status{.node_name = "node-a",
                         .items = {{.plan = "default",
                                    .name = "vllm-image",
                                    .type = kImage,
                                    .state = kPulling,
                                    .bytes_done = 1'000,
                                    .bytes_total = 4'000,
                                    .last_checked = "2026-11-24T10:00:00Z"},
                                   {.plan = "default",
                                    .name = "qwen",
                                    .type = kHfModel,
                                    .state = kReady,
                                    .commit = "abc",
                                    .revision = "main",
                                    .size_bytes = 99,
                                    .last_used = "2026-11-24T09:00:00Z"},
                                   {.plan = "default",
                                    .name = "repo",
                                    .type = kGitRepo,
                                    .state = kFailed,
                                    .message = "authentication required"}},
                         .disk = {.used_bytes = 10, .limit_bytes = 100},
                         .last_update = "2026-11-24T10:00:01Z"};
  const json j = NodeStatusToJson(status);
  EXPECT_EQ(j["metadata"]["name"], "node-a");
  EXPECT_EQ(j["status"]["items"][0]["bytesDone"], 1'000);
  EXPECT_FALSE(j["status"]["items"][0].contains("digest"));
  absl::StatusOr<NodeCacheStatus> back = NodeStatusFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, status);
}

TEST(TypesTest, NodeNameFallsBackToTheObjectName) {
  absl::StatusOr<NodeCacheStatus> s = NodeStatusFromJson(json{{"metadata", {{"name", "n1"}}}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->node_name, "n1");
  EXPECT_TRUE(s->items.empty());
}

// The objects as the JSON builders before the typed objects wrote them
// (issue 32, item 3): the same bytes on the wire.
TEST(TypesTest, TheObjectIsTheOneWrittenBeforeItWasTyped) {
  EXPECT_EQ(
      PlanToJson(FullPlan()).dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"CachePlan","metadata":{"name":"default"},"spec":{"items":[{"image":{"ref":"vllm/vllm-openai:v0.6.3"},"name":"vllm-image","type":"image"},{"gitRepo":{"branch":"main","url":"https://github.com/vllm-project/vllm"},"name":"vllm-repo","pullSecretRef":{"name":"git-token","namespace":"ml"},"refreshRequestedAt":"2026-11-24T10:00:00Z","scope":{"nodeSelector":{"gpu":"h100"}},"type":"gitRepo"},{"hfModel":{"allowPatterns":["*.json","*.safetensors"],"repoId":"Qwen/Qwen2.5-0.5B","revision":"main"},"name":"qwen","type":"hfModel"}]},"status":{"conditions":[{"lastTransitionTime":"2026-11-24T10:00:00Z","message":"1 of 6 failed","reason":"ItemsFailed","status":"False","type":"Ready"}],"summary":{"failed":1,"items":3,"nodes":2,"pending":0,"pulling":1,"ready":4}}})");
  // No items and no status: the list is written empty and status left out;
  // a status with zero counts and no conditions still writes them all.
  EXPECT_EQ(
      PlanToJson(CachePlan{.name = "empty"}).dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"CachePlan","metadata":{"name":"empty"},"spec":{"items":[]}})");
  EXPECT_EQ(
      PlanToJson(CachePlan{.name = "zero", .status = PlanStatus{}}).dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"CachePlan","metadata":{"name":"zero"},"spec":{"items":[]},"status":{"conditions":[],"summary":{"failed":0,"items":0,"nodes":0,"pending":0,"pulling":0,"ready":0}}})");
  NodeCacheStatus status{.node_name = "node-a",
                         .items = {{.plan = "default",
                                    .name = "vllm-image",
                                    .type = kImage,
                                    .state = kPending,
                                    .last_checked = "2026-11-24T10:00:00Z"},
                                   {.plan = "default",
                                    .name = "qwen",
                                    .type = kHfModel,
                                    .state = kReady,
                                    .bytes_done = 99,
                                    .bytes_total = 99,
                                    .commit = "abc",
                                    .revision = "main",
                                    .size_bytes = 99,
                                    .last_used = "2026-11-24T09:00:00Z"}},
                         .disk = {.used_bytes = 99, .limit_bytes = 0},
                         .last_update = "2026-11-24T10:00:01Z"};
  EXPECT_EQ(
      NodeStatusToJson(status).dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"NodeCacheStatus","metadata":{"name":"node-a"},"spec":{},"status":{"disk":{"limitBytes":0,"usedBytes":99},"items":[{"lastChecked":"2026-11-24T10:00:00Z","name":"vllm-image","plan":"default","state":"Pending","type":"image"},{"bytesDone":99,"bytesTotal":99,"commit":"abc","lastUsed":"2026-11-24T09:00:00Z","name":"qwen","plan":"default","revision":"main","sizeBytes":99,"state":"Ready","type":"hfModel"}],"lastUpdate":"2026-11-24T10:00:01Z","nodeName":"node-a"}})");
  // Nothing planned here yet: the empty list, both disk values and spec.
  EXPECT_EQ(
      NodeStatusToJson(NodeCacheStatus{.node_name = "node-b"}).dump(),
      R"({"apiVersion":"canhazgpu.dev/v1alpha1","kind":"NodeCacheStatus","metadata":{"name":"node-b"},"spec":{},"status":{"disk":{"limitBytes":0,"usedBytes":0},"items":[],"nodeName":"node-b"}})");
}

}  // namespace
}  // namespace canhazgpu::cacheplan
