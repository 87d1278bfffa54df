#include "clusterview/queue.h"

#include "absl/time/time.h"
#include "clusterview/explain.h"
#include "clusterview/test_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace testing;  // NOLINT: the view builders

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddClasses(view_);
    AddGpuNode(view_, "node-a", 2);
    AddRunning(view_, "bert", "node-a", {"gpu-0", "gpu-1"}, "bob");
    // Pending, created out of name order; one of ours, one not.
    AddPending("late", "2026-11-24T10:30:00Z", "carol", {Request("gpu", kGpuClass, 1)});
    AddPending("early", "2026-11-24T10:00:00Z", "", {Request("gpu", kGpuClass, 3)});
    view_.pods["default/late"]["metadata"]["labels"]["canhazgpu.dev/run"] = "r-1";
    // Pending but without claims: not in the queue.
    json plain = Pod("default", "plain", "");
    plain["spec"].erase("resourceClaims");
    Put(view_, plain);
  }

  void AddPending(const std::string& name, const char* created, const std::string& user,
                  std::vector<json> requests) {
    Put(view_, Claim("default", name + "-gpu", requests));
    Put(view_, Pod("default", name, name + "-gpu", user, created));
  }

  View view_;
};

TEST_F(QueueTest, PendingPodsWithClaimsInCreationOrder) {
  std::vector<QueueEntry> q = PendingQueue(view_, At("2026-11-24T11:00:00Z"));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].position, 1);
  EXPECT_EQ(q[0].name, "early");
  EXPECT_EQ(q[0].user, "");
  EXPECT_EQ(q[0].run, "");
  EXPECT_THAT(q[0].asks, ElementsAre("gpu: 3 x gpu.canhazgpu.dev"));
  EXPECT_TRUE(q[0].never);
  EXPECT_THAT(q[0].why, StartsWith("can never run: "));
  EXPECT_EQ(q[0].age, std::chrono::hours(1));

  EXPECT_EQ(q[1].position, 2);
  EXPECT_EQ(q[1].name, "late");
  EXPECT_EQ(q[1].user, "carol");
  EXPECT_EQ(q[1].run, "r-1");
  EXPECT_FALSE(q[1].never);
  EXPECT_THAT(q[1].why,
              HasSubstr("gpu-0, gpu-1 taken by team/bert-gpu (pod bert, user bob (from label))"));
}

TEST_F(QueueTest, ARunsNoteIsShownInLine) {
  json pod = view_.pods.at("default/late");
  pod["metadata"]["annotations"][kNoteAnnotation] = "eval ckpt 7";
  view_.pods["default/late"] = pod;
  std::vector<QueueEntry> q = PendingQueue(view_, At("2026-11-24T11:00:00Z"));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[1].note, "eval ckpt 7");
  EXPECT_EQ(QueueRows(q)[2][3], "eval ckpt 7");
  EXPECT_EQ(QueueJson(q)[1]["note"], "eval ckpt 7");
  EXPECT_EQ(ExplainPod(view_, pod, At("2026-11-24T11:00:00Z")).note, "eval ckpt 7");
  EXPECT_THAT(ExplainPod(view_, pod, At("2026-11-24T11:00:00Z")).Text(),
              HasSubstr("\nnote: eval ckpt 7\n"));
}

TEST_F(QueueTest, RowsAndJson) {
  std::vector<QueueEntry> q = PendingQueue(view_, At("2026-11-24T11:00:00Z"));
  auto rows = QueueRows(q);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_THAT(rows[0], ElementsAre("#", "POD", "USER", "NOTE", "ASKS", "AGE", "WHY"));
  EXPECT_EQ(rows[2][0], "2");
  EXPECT_EQ(rows[2][1], "default/late");
  EXPECT_EQ(rows[2][2], "carol (from label)") << "the pod's author writes the label";
  EXPECT_EQ(rows[2][3], "-");
  EXPECT_EQ(rows[2][4], "gpu: 1 x gpu.canhazgpu.dev");
  EXPECT_EQ(rows[2][5], "30m 0s");
  EXPECT_EQ(rows[1][2], "-");
  nlohmann::ordered_json j = QueueJson(q);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["name"], "late");
  EXPECT_EQ(j[1]["run"], "r-1");
  EXPECT_EQ(j[0]["ageSeconds"], 3600);
  EXPECT_EQ(j[0]["never"], true);
}

TEST_F(QueueTest, ScheduledAndFinishedPodsAreNotQueued) {
  view_.pods["default/late"]["spec"]["nodeName"] = "node-a";
  view_.pods["default/early"]["status"]["phase"] = "Failed";
  EXPECT_TRUE(PendingQueue(view_, At("2026-11-24T11:00:00Z")).empty());
}

}  // namespace
}  // namespace canhazgpu::clusterview
