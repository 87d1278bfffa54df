#include "clusterview/gang_view.h"

#include "clusterview/gpu_status.h"
#include "clusterview/queue.h"
#include "clusterview/test_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using namespace testing;  // NOLINT(build/namespaces): the view builders
using ::testing::HasSubstr;

// Rank `rank` of the run's Job `job`, pending, with its own claim of one GPU.
json GangViewRank(View& view, const std::string& job, int rank) {
  const std::string name = StrCat(job, "-", rank, "-x");
  Put(view, Claim("team", StrCat(name, "-gpus"), {Request("gpus", kGpuClass, 1)}));
  json pod = Pod("team", name, StrCat(name, "-gpus"), "alice");
  pod["metadata"]["labels"]["canhazgpu.dev/run"] = "r1";
  pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = StrCat(rank);
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", job}, {"controller", true}}};
  Put(view, pod);
  return pod;
}

TEST(GangViewTest, RanksOfARunAreFoundAndAnythingElseIsNot) {
  View view;
  AddClasses(view);
  const json r0 = GangViewRank(view, "gang", 0);
  EXPECT_EQ(GangJobOf(r0), "gang");
  json plain = r0;
  plain["metadata"].erase("ownerReferences");
  EXPECT_EQ(GangJobOf(plain), "");
  GangViewRank(view, "gang", 1);
  EXPECT_EQ(PendingRanks(view, "team", "gang").size(), 2u);
  EXPECT_TRUE(PendingRanks(view, "other", "gang").empty());
}

// Two nodes of one GPU, node-1's taken by bob: the queue lists the run
// once, with how many ranks wait and which node could hold one.
TEST(GangViewTest, TheQueueShowsARunAsOneItemWithWhatEachNodeCouldHold) {
  View view;
  AddClasses(view);
  AddGpuNode(view, "node-0", 1);
  AddGpuNode(view, "node-1", 1);
  AddRunning(view, "busy", "node-1", {"gpu-0"}, "bob");
  GangViewRank(view, "gang", 0);
  GangViewRank(view, "gang", 1);
  const std::vector<QueueEntry> queue = PendingQueue(view, At("2026-11-29T10:00:00Z"));
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].name, "gang");
  EXPECT_EQ(queue[0].ranks, 2);
  EXPECT_THAT(queue[0].asks[0], HasSubstr("2 ranks × gpus: 1 x gpu.canhazgpu.dev"));
  EXPECT_THAT(queue[0].why, HasSubstr("needs 2 nodes with a rank's devices free at once; 1 has: "));
  EXPECT_THAT(queue[0].why, HasSubstr("node-0 could hold a rank"));
  EXPECT_THAT(queue[0].why, HasSubstr("node-1 has"));
  EXPECT_THAT(queue[0].why, HasSubstr("bob"));
  EXPECT_EQ(QueueRows(queue)[1][1], "team/gang (2 ranks)");
}

// status names a running rank by its run, the Job, and its rank.
TEST(GangViewTest, StatusNamesARankByItsJob) {
  View view;
  AddClasses(view);
  AddGpuNode(view, "node-0", 1);
  json rank = GangViewRank(view, "gang", 1);
  rank["spec"]["nodeName"] = "node-0";
  rank["status"]["phase"] = "Running";
  Put(view, rank);
  const std::string claim = rank["spec"]["resourceClaims"][0]["resourceClaimName"];
  Put(view, Allocate(view.claims.at(StrCat("team/", claim)), "node-0", {"gpu-0"}, "gang-1-x"));
  absl::StatusOr<GpuStatusReport> report = GpuStatus(view, At("2026-11-29T10:00:00Z"));
  ASSERT_TRUE(report.ok()) << report.status();
  const TextRows rows = StatusRows(*report);
  ASSERT_EQ(rows.rows.size(), 1u);
  EXPECT_THAT(Join(rows.rows[0], " | "), HasSubstr("alice (from label; job team/gang rank 1)"));
  const nlohmann::ordered_json json_report = StatusJson(*report);
  EXPECT_EQ(json_report["devices"][0]["claims"][0]["pods"][0]["job"], "gang");
  EXPECT_EQ(json_report["devices"][0]["claims"][0]["pods"][0]["rank"], 1);
}

}  // namespace
}  // namespace canhazgpu::clusterview
