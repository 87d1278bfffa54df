#include "cli/k8shazgpu/gang_ranks.h"

#include "cli/k8shazgpu/gang_logs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json RankPod(int rank, const std::string& created = "2026-11-29T10:00:00Z") {
  return {
      {"metadata",
       {{"name", "job-" + std::to_string(rank) + "-x"},
        {"uid", "uid-" + std::to_string(rank) + created},
        {"creationTimestamp", created},
        {"annotations", {{"batch.kubernetes.io/job-completion-index", std::to_string(rank)}}}}},
      {"spec",
       {{"resourceClaims", {{{"name", "gpus"}}}}, {"nodeName", "node-" + std::to_string(rank)}}},
      {"status", {{"phase", "Running"}}}};
}

// The rank as ended: its container with `code`, at `finished`.
json Ended(json pod, int code, const std::string& finished) {
  pod["status"]["phase"] = code == 0 ? "Succeeded" : "Failed";
  pod["status"]["containerStatuses"] = {
      {{"name", "main"},
       {"state", {{"terminated", {{"exitCode", code}, {"finishedAt", finished}}}}}}};
  return pod;
}

TEST(GangRanksTest, RanksAreOrderedAndAReplacementWins) {
  json deleting = RankPod(0);
  deleting["metadata"]["deletionTimestamp"] = "2026-11-29T10:01:00Z";
  const std::vector<json> ranks = CurrentRanks({RankPod(1), RankPod(0, "2026-11-29T09:00:00Z"),
                                                RankPod(0, "2026-11-29T10:05:00Z"), deleting,
                                                json{{"metadata", {{"name", "not-a-rank"}}}}});
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(RankOf(ranks[0]), 0);
  EXPECT_EQ(ranks[0]["metadata"]["creationTimestamp"], "2026-11-29T10:05:00Z");
  EXPECT_EQ(RankOf(ranks[1]), 1);
  EXPECT_FALSE(AllRanksWithClaims(ranks, 2));  // no claims made yet
  json made = ranks[0];
  made["status"]["resourceClaimStatuses"] = {{{"name", "gpus"}, {"resourceClaimName", "c"}}};
  json made1 = ranks[1];
  made1["status"]["resourceClaimStatuses"] = made["status"]["resourceClaimStatuses"];
  EXPECT_TRUE(AllRanksWithClaims({made, made1}, 2));
  EXPECT_FALSE(AllRanksWithClaims({made}, 2));
}

TEST(GangRanksTest, TheFirstRankToFailGivesTheExitCodeAndTheReason) {
  EXPECT_FALSE(OutcomeOfRanks({RankPod(0), RankPod(1)}, 2).has_value());
  EXPECT_FALSE(OutcomeOfRanks({Ended(RankPod(0), 0, "2026-11-29T10:02:00Z"), RankPod(1)}, 2));
  const std::optional<GangOutcome> ok = OutcomeOfRanks(
      {Ended(RankPod(0), 0, "2026-11-29T10:02:00Z"), Ended(RankPod(1), 0, "2026-11-29T10:03:00Z")},
      2);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->exit_code, 0);
  EXPECT_EQ(ok->message, "");
  // Rank 1 failed first with 3; rank 0 was stopped after it (143).
  const std::optional<GangOutcome> failed =
      OutcomeOfRanks({Ended(RankPod(0), 143, "2026-11-29T10:05:00Z"),
                      Ended(RankPod(1), 3, "2026-11-29T10:04:00Z")},
                     2);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->exit_code, 3);
  EXPECT_THAT(failed->message, HasSubstr("rank 1 (pod job-1-x on node-1) exited with 3"));
}

TEST(GangRanksTest, GatesAreFoundByName) {
  json pod = RankPod(0);
  EXPECT_FALSE(HasGate(pod, "canhazgpu.dev/gang"));
  pod["spec"]["schedulingGates"] = {{{"name", "other"}}, {{"name", "canhazgpu.dev/gang"}}};
  EXPECT_TRUE(HasGate(pod, "canhazgpu.dev/gang"));
}

TEST(GangLogsTest, LinesArePrefixedWholeAcrossChunks) {
  std::string partial;
  EXPECT_EQ(PrefixLines(1, "hello\nwor", partial), "[1] hello\n");
  EXPECT_EQ(partial, "wor");
  EXPECT_EQ(PrefixLines(1, "ld\n\nend", partial), "[1] world\n[1] \n");
  EXPECT_EQ(partial, "end");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
