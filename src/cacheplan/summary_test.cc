#include "cacheplan/summary.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cacheplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const TimePoint kNow = FromEpochMillis(1'795'000'000'000);
const TimePoint kLater = FromEpochMillis(1'795'000'060'000);

CachePlan Plan() {
  CachePlan plan{.name = "default"};
  plan.items = {
      {.name = "img", .type = kImage, .image = ImageSource{.ref = "nginx"}},
      {.name = "model", .type = kHfModel, .hf_model = HfModelSource{.repo_id = "gpt2"}},
  };
  plan.items[1].node_selector = {{"gpu", "h100"}};
  return plan;
}

NodeItem Entry(std::string name, std::string type, std::string state) {
  return {.plan = "default",
          .name = std::move(name),
          .type = std::move(type),
          .state = std::move(state)};
}

TEST(AppliesToTest, EverySelectorLabelMustMatch) {
  CacheItem item{.name = "x", .type = kImage};
  EXPECT_TRUE(AppliesTo(item, {}));
  item.node_selector = {{"gpu", "h100"}, {"zone", "a"}};
  EXPECT_TRUE(AppliesTo(item, {{"gpu", "h100"}, {"zone", "a"}, {"other", "y"}}));
  EXPECT_FALSE(AppliesTo(item, {{"gpu", "h100"}}));
  EXPECT_FALSE(AppliesTo(item, {{"gpu", "a100"}, {"zone", "a"}}));
}

TEST(SummarizeTest, AllReadyIsReadyAndNotDegraded) {
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "a", .items = {Entry("img", kImage, kReady), Entry("model", kHfModel, kReady)}},
      {.node_name = "b", .items = {Entry("img", kImage, kReady)}}};
  const PlanStatus s = Summarize(Plan(), nodes, {}, kNow);
  EXPECT_EQ(s.summary, (PlanSummary{.items = 2, .nodes = 2, .ready = 3}));
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[0].type, "Ready");
  EXPECT_EQ(s.conditions[0].status, "True");
  EXPECT_EQ(s.conditions[0].reason, "AllReady");
  EXPECT_EQ(s.conditions[0].last_transition_time, "2026-11-18T11:06:40Z");
  EXPECT_EQ(s.conditions[1].type, "Degraded");
  EXPECT_EQ(s.conditions[1].status, "False");
}

TEST(SummarizeTest, FailuresNameTheItemNodeAndMessage) {
  NodeItem failed = Entry("model", kHfModel, kFailed);
  failed.message = "401 from huggingface.co: set pullSecretRef to a Secret with a token";
  NodeItem pulling = Entry("img", kImage, kPulling);
  pulling.bytes_done = 5;
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "a", .items = {pulling, failed}},
      {.node_name = "b", .items = {Entry("img", kImage, kPending)}}};
  const PlanStatus s = Summarize(Plan(), nodes, {}, kNow);
  EXPECT_EQ(s.summary,
            (PlanSummary{.items = 2, .nodes = 2, .pulling = 1, .failed = 1, .pending = 1}));
  EXPECT_EQ(s.conditions[0].status, "False");
  EXPECT_EQ(s.conditions[0].reason, "ItemsFailed");
  EXPECT_THAT(s.conditions[0].message,
              HasSubstr("1 of 3 failed: model on a: 401 from huggingface.co"));
  EXPECT_EQ(s.conditions[1].status, "True");
  EXPECT_EQ(s.conditions[1].message,
            "model on a: 401 from huggingface.co: set pullSecretRef to a Secret with a token");
}

TEST(SummarizeTest, ManyFailuresAreCutShort) {
  CachePlan plan{.name = "default"};
  std::vector<NodeCacheStatus> nodes(1);
  nodes[0].node_name = "a";
  for (int i = 0; i < 5; ++i) {
    plan.items.push_back({.name = "i" + std::to_string(i), .type = kImage});
    nodes[0].items.push_back(Entry("i" + std::to_string(i), kImage, kFailed));
  }
  const PlanStatus s = Summarize(plan, nodes, {}, kNow);
  EXPECT_EQ(s.conditions[1].message, "i0 on a; i1 on a; i2 on a; and 2 more");
}

TEST(SummarizeTest, NodeLabelsMakeUnreportedItemsPendingOnlyWhereTheyApply) {
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "a", .items = {Entry("img", kImage, kReady)}}};
  const std::map<std::string, Labels> labels = {
      {"a", {{"gpu", "h100"}}}, {"b", {{"gpu", "a100"}}}, {"c", {}}};
  const PlanStatus s = Summarize(Plan(), nodes, labels, kNow);
  // a: img ready, model pending (applies, unreported); b and c: img pending.
  EXPECT_EQ(s.summary, (PlanSummary{.items = 2, .nodes = 3, .ready = 1, .pending = 3}));
  EXPECT_EQ(s.conditions[0].reason, "Pulling");
  EXPECT_THAT(s.conditions[0].message, HasSubstr("1 of 4 ready; img on b (pending)"));
}

TEST(SummarizeTest, OtherPlansAndReplacedItemsDoNotCountAsReady) {
  NodeItem other = Entry("img", kImage, kReady);
  other.plan = "other";
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "a", .items = {other, Entry("model", kImage, kReady)}}};
  const PlanStatus s = Summarize(Plan(), nodes, {}, kNow);
  // model reported with the wrong type: an old report of a replaced item.
  EXPECT_EQ(s.summary, (PlanSummary{.items = 2, .nodes = 1, .pending = 1}));
}

TEST(SummarizeTest, TransitionTimesChangeOnlyWithTheStatus) {
  CachePlan plan = Plan();
  const std::vector<NodeCacheStatus> ready = {
      {.node_name = "a",
       .items = {Entry("img", kImage, kReady), Entry("model", kHfModel, kReady)}}};
  plan.status = Summarize(plan, ready, {}, kNow);
  const PlanStatus same = Summarize(plan, ready, {}, kLater);
  EXPECT_EQ(same.conditions[0].last_transition_time, "2026-11-18T11:06:40Z");
  const std::vector<NodeCacheStatus> failing = {
      {.node_name = "a", .items = {Entry("img", kImage, kFailed)}}};
  const PlanStatus changed = Summarize(plan, failing, {}, kLater);
  EXPECT_EQ(changed.conditions[0].last_transition_time, "2026-11-18T11:07:40Z");
}

TEST(SummarizeTest, AnEmptyPlanIsReady) {
  const PlanStatus s = Summarize(CachePlan{.name = "p"}, {}, {}, kNow);
  EXPECT_EQ(s.conditions[0].status, "True");
  EXPECT_EQ(s.conditions[0].reason, "NoItems");
}

TEST(ItemAcrossNodesTest, SplitsNodesByState) {
  NodeItem pulling = Entry("img", kImage, kPulling);
  const std::vector<NodeCacheStatus> nodes = {
      {.node_name = "a", .items = {pulling}},
      {.node_name = "b", .items = {Entry("img", kImage, kReady)}},
      {.node_name = "c", .items = {}}};
  const ItemNodes across = ItemAcrossNodes(Plan().items[0], "default", nodes);
  EXPECT_THAT(across.ready, ElementsAre("b"));
  EXPECT_THAT(across.pulling_nodes, ElementsAre("a"));
  EXPECT_TRUE(across.pending.empty());
  EXPECT_EQ(FindNodeItem(nodes[2], "default", "img"), nullptr);
  EXPECT_EQ(FindNodeItem(nodes[1], "default", "img")->state, kReady);
}

}  // namespace
}  // namespace canhazgpu::cacheplan
