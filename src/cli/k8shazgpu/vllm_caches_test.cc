// What vllm run wants cached, how it joins the plan, and how the nodes'
// reports become "ready on these nodes" or "this node is warming".
#include "cli/k8shazgpu/vllm_caches.h"

#include "cacheplan/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using cacheplan::CacheItem;
using cacheplan::NodeCacheStatus;
using cacheplan::NodeItem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kBase = "0123456789abcdef0123456789abcdef01234567";

TEST(ParseServedModelTest, FindsTheModelOfVllmServeAndOfModelFlags) {
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "Qwen/Qwen2.5-0.5B", "--port", "8000"}),
            (ServedModel{.repo_id = "Qwen/Qwen2.5-0.5B", .revision = ""}));
  EXPECT_EQ(ParseServedModel({"/usr/local/bin/vllm", "serve", "org/m", "--revision", "v2"}),
            (ServedModel{.repo_id = "org/m", .revision = "v2"}));
  EXPECT_EQ(ParseServedModel({"python3", "-m", "vllm.entrypoints.openai.api_server",
                              "--model=org/m", "--revision=abc"}),
            (ServedModel{.repo_id = "org/m", .revision = "abc"}));
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "--model", "org/m"}),
            (ServedModel{.repo_id = "org/m", .revision = ""}));
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "gpt2"}),
            (ServedModel{.repo_id = "gpt2", .revision = ""}));
}

TEST(ParseServedModelTest, NoModelForOtherCommandsLocalPathsAndBadIds) {
  EXPECT_EQ(ParseServedModel({"python3", "bench.py"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "--port", "1"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "/models/llama"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "./llama"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "~/llama"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"vllm", "serve", "a/b/c"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"python3", "x.py", "--model"}), std::nullopt);
  EXPECT_EQ(ParseServedModel({"echo", "vllm", "bench"}), std::nullopt);
}

TEST(WantedItemsTest, OneValidItemPerSourceNamedFromIt) {
  const std::vector<CacheItem> items =
      WantedItems({.image = "registry.local/vllm:" + kBase,
                   .repo_url = "https://github.com/vllm-project/vllm.git",
                   .repo_commit = kBase,
                   .model = ServedModel{.repo_id = "Qwen/Qwen2.5-0.5B", .revision = ""}});
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].type, cacheplan::kImage);
  EXPECT_EQ(items[0].image->ref, "registry.local/vllm:" + kBase);
  EXPECT_EQ(items[1].type, cacheplan::kGitRepo);
  EXPECT_EQ(items[1].git_repo->commit, kBase);
  EXPECT_EQ(items[1].name, "vllm-project-vllm-0123456789ab");
  EXPECT_EQ(items[2].type, cacheplan::kHfModel);
  EXPECT_EQ(items[2].name, "qwen-qwen2-5-0-5b");
  EXPECT_TRUE(cacheplan::ValidateItems(items).ok()) << cacheplan::ValidateItems(items);
  EXPECT_THAT(WantedItems({.image = "", .repo_url = "", .repo_commit = "", .model = {}}),
              IsEmpty());
}

TEST(AddMissingItemsTest, ReusesItemsOfTheSameSourceAndRenamesOnClashes) {
  std::vector<CacheItem> plan = WantedItems({.image = "docker.io/vllm/vllm-openai:latest",
                                             .repo_url = "",
                                             .repo_commit = "",
                                             .model = {}});
  plan[0].name = "team-vllm";
  // Another model already holds the name the wanted one would get.
  std::vector<CacheItem> other =
      WantedItems({.image = "",
                   .repo_url = "",
                   .repo_commit = "",
                   .model = ServedModel{.repo_id = "org/m", .revision = "v1"}});
  other[0].name = "org-m";
  plan.push_back(other[0]);

  std::vector<CacheItem> wanted =
      WantedItems({.image = "vllm/vllm-openai",
                   .repo_url = "",
                   .repo_commit = "",
                   .model = ServedModel{.repo_id = "org/m", .revision = ""}});
  EXPECT_TRUE(AddMissingItems(plan, wanted));
  EXPECT_EQ(wanted[0].name, "team-vllm");  // "vllm/vllm-openai" is that image
  EXPECT_EQ(wanted[1].name, "org-m-2");
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[2], wanted[1]);
  EXPECT_TRUE(cacheplan::ValidateItems(plan).ok());

  // Everything there now: nothing changes.
  std::vector<CacheItem> again =
      WantedItems({.image = "vllm/vllm-openai:latest",
                   .repo_url = "",
                   .repo_commit = "",
                   .model = ServedModel{.repo_id = "org/m", .revision = "main"}});
  EXPECT_FALSE(AddMissingItems(plan, again));
  EXPECT_EQ(again[1].name, "org-m-2");
}

TEST(AddMissingItemsTest, APartialModelOrAnotherCommitIsNotTheSameSource) {
  CacheItem partial = WantedItems({.image = "",
                                   .repo_url = "",
                                   .repo_commit = "",
                                   .model = ServedModel{.repo_id = "org/m", .revision = ""}})[0];
  CacheItem wanted = partial;
  partial.hf_model->allow_patterns = {"*.json"};
  EXPECT_FALSE(SameSource(partial, wanted));
  CacheItem repo = WantedItems(
      {.image = "", .repo_url = "https://h/r.git", .repo_commit = kBase, .model = {}})[0];
  CacheItem branch = repo;
  branch.git_repo->commit = "";
  branch.git_repo->branch = "main";
  EXPECT_FALSE(SameSource(branch, repo));
  EXPECT_TRUE(SameSource(repo, repo));
}

NodeItem Entry(const CacheItem& item, const std::string& state, int64_t done = 0, int64_t total = 0,
               const std::string& message = "") {
  return {.plan = "default",
          .name = item.name,
          .type = item.type,
          .state = state,
          .bytes_done = done,
          .bytes_total = total,
          .message = message};
}

class AssessCachesTest : public ::testing::Test {
 protected:
  std::vector<CacheItem> wanted_ =
      WantedItems({.image = "registry.local/vllm:" + kBase,
                   .repo_url = "https://h/vllm-project/vllm.git",
                   .repo_commit = kBase,
                   .model = ServedModel{.repo_id = "org/m", .revision = ""}});
};

TEST_F(AssessCachesTest, ReadyNodesHaveEveryItemReady) {
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "node-1",
       .items = {Entry(wanted_[0], "Ready"), Entry(wanted_[1], "Ready"),
                 Entry(wanted_[2], "Ready")}},
      {.node_name = "node-0",
       .items = {Entry(wanted_[0], "Ready"), Entry(wanted_[1], "Ready"),
                 Entry(wanted_[2], "Ready")}},
      {.node_name = "node-2", .items = {Entry(wanted_[0], "Ready")}},
  };
  const CacheReadiness r = AssessCaches(wanted_, "default", nodes, {}, "");
  EXPECT_THAT(r.ready_nodes, ElementsAre("node-0", "node-1"));
  EXPECT_TRUE(r.progress.empty());
  EXPECT_FALSE(r.no_agent);
  EXPECT_THAT(AssessCaches(wanted_, "default", nodes, {}, "node-1").ready_nodes,
              ElementsAre("node-1"));
  EXPECT_THAT(AssessCaches(wanted_, "other-plan", nodes, {}, "").ready_nodes, IsEmpty());
}

TEST_F(AssessCachesTest, ProgressNamesTheClosestNodeAndHowFarItIs) {
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "node-0", .items = {Entry(wanted_[1], "Ready")}},
      {.node_name = "node-1",
       .items = {Entry(wanted_[0], "Pulling", 3LL << 30, 8LL << 30), Entry(wanted_[1], "Ready"),
                 Entry(wanted_[2], "Ready")}},
  };
  const CacheReadiness r = AssessCaches(wanted_, "default", nodes, {}, "");
  EXPECT_THAT(r.ready_nodes, IsEmpty());
  EXPECT_EQ(r.progress, "node-1 is warming (2 of 3 ready): image " + wanted_[0].name +
                            " Pulling 3.0 GiB of 8.0 GiB (37%) - the closest of 2 nodes");
  EXPECT_THAT(r.failed_everywhere, IsEmpty());
}

TEST_F(AssessCachesTest, FailedEverywhereOnlyWhenNoCandidateNodeHasIt) {
  std::vector<NodeCacheStatus> nodes = {
      {.node_name = "node-0", .items = {Entry(wanted_[0], "Failed", 0, 0, "manifest unknown")}},
      {.node_name = "node-1", .items = {Entry(wanted_[0], "Pulling", 1, 2)}},
  };
  EXPECT_THAT(AssessCaches(wanted_, "default", nodes, {}, "").failed_everywhere, IsEmpty());
  EXPECT_THAT(
      AssessCaches(wanted_, "default", nodes, {}, "node-0").failed_everywhere.at(wanted_[0].name),
      "node-0: manifest unknown");
  nodes[1].items[0] = Entry(wanted_[0], "Failed", 0, 0, "denied");
  const CacheReadiness r = AssessCaches(wanted_, "default", nodes, {}, "");
  EXPECT_EQ(r.failed_everywhere.at(wanted_[0].name), "node-0: manifest unknown");
  EXPECT_THAT(r.progress, HasSubstr("(0 of 3 ready, 1 failed): "));
  EXPECT_THAT(r.progress, HasSubstr("Failed: manifest unknown"));
}

// The waiting line fits 100 columns with its prefix, the counts kept.
TEST_F(AssessCachesTest, TheWaitingLineIsCutToTheWidth) {
  CacheReadiness r;
  r.progress = "node-0 is warming (2 of 3 ready, 1 failed): image " + std::string(200, 'x');
  const std::string line = CacheProgressLine(r);
  EXPECT_EQ(std::string("k8shazgpu: ").size() + line.size(), 100u + 2);  // "…" is 3 bytes
  EXPECT_THAT(line, ::testing::StartsWith(
                        "waiting for the node caches: node-0 is warming (2 of 3 ready, 1 failed)"));
  EXPECT_THAT(line, ::testing::EndsWith("x…"));
  r.progress = "node-0 is warming (0 of 1 ready): image a Pending";
  EXPECT_EQ(CacheProgressLine(r), "waiting for the node caches: " + r.progress);
}

TEST_F(AssessCachesTest, OldReportsScopesAndMissingAgents) {
  NodeItem old = Entry(wanted_[0], "Ready");
  old.type = cacheplan::kHfModel;  // an earlier item of the same name
  std::vector<NodeCacheStatus> nodes = {
      {.node_name = "node-0",
       .items = {old, Entry(wanted_[1], "Ready"), Entry(wanted_[2], "Ready")}}};
  CacheReadiness r = AssessCaches(wanted_, "default", nodes, {}, "");
  EXPECT_THAT(r.ready_nodes, IsEmpty());
  EXPECT_THAT(r.progress, HasSubstr("image " + wanted_[0].name + " Pending"));

  std::vector<CacheItem> scoped = wanted_;
  scoped[2].node_selector = {{"gpu", "h100"}};
  nodes[0].items[0] = Entry(wanted_[0], "Ready");
  r = AssessCaches(scoped, "default", nodes, {{"node-0", {{"gpu", "a100"}}}}, "");
  EXPECT_THAT(r.ready_nodes, IsEmpty());
  EXPECT_THAT(r.progress, HasSubstr(scoped[2].name + " not in its scope"));

  EXPECT_TRUE(AssessCaches(wanted_, "default", {}, {}, "").no_agent);
  EXPECT_TRUE(AssessCaches(wanted_, "default", nodes, {}, "node-9").no_agent);
}

// Issue 33: the fallback warning was one ~600-character line naming the
// image four times. Now the image once, each line within 100 columns.
TEST(ImageFallbackLinesTest, NamesTheImageOnceInLinesOf100Columns) {
  const std::string image =
      "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:0123456789abcdef0123456789abcdef01234567";
  const std::string reason =
      "node-0: pulling " + image +
      " through unix:///run/containerd/containerd.sock: rpc error: code = NotFound desc = "
      "failed to pull and unpack image \"" +
      image + "\": failed to resolve reference \"" + image + "\": " + image + ": not found";
  std::vector<std::string> lines = ImageFallbackLines(image, reason, "vllm/vllm-openai:latest");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "warning: no node can pull the image:");
  EXPECT_EQ(lines[1], "  " + image);
  EXPECT_THAT(lines[2], ::testing::StartsWith("  node-0: pulling it through unix://"));
  EXPECT_THAT(lines[2], ::testing::EndsWith("…"));
  EXPECT_EQ(lines[3],
            "running vllm/vllm-openai:latest instead; its compiled code may not match the "
            "merge-base");
  size_t mentions = 0;
  for (const std::string& line : lines) {
    EXPECT_LE(std::string("k8shazgpu: ").size() + line.size(), 100u + 2) << line;  // "…" is 3 bytes
    for (size_t at = line.find(image); at != std::string::npos; at = line.find(image, at + 1))
      ++mentions;
  }
  EXPECT_EQ(mentions, 1u);
  // A short reason is kept whole.
  EXPECT_EQ(ImageFallbackLines("x:1", "node-0: x:1: not found", "y")[2], "  node-0: it: not found");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
