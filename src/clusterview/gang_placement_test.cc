#include "clusterview/gang_placement.h"

#include "clusterview/test_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using namespace testing;  // NOLINT(build/namespaces): the view builders
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rank `rank` of gang `run`: its own claim of `gpus` GPUs, kept off the
// nodes of the gang's other ranks.
json GangRank(View& view, const std::string& run, int rank, int gpus) {
  const std::string name = StrCat(run, "-", rank);
  Put(view, Claim("team", StrCat(name, "-gpu"), {Request("gpu", kGpuClass, gpus)}));
  json pod = Pod("team", name, StrCat(name, "-gpu"));
  pod["metadata"]["labels"]["canhazgpu.dev/run"] = run;
  pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {{"labelSelector", {{"matchLabels", {{"canhazgpu.dev/run", run}}}}},
       {"topologyKey", "kubernetes.io/hostname"}}};
  Put(view, pod);
  return pod;
}

View GangCluster(int nodes, int gpus_each) {
  View view;
  AddClasses(view);
  for (int n = 0; n < nodes; ++n) {
    const std::string name = StrCat("node-", n);
    AddGpuNode(view, name, gpus_each);
    view.nodes[name]["metadata"]["labels"] = {{"kubernetes.io/hostname", name}};
  }
  return view;
}

TEST(GangPlacementTest, EveryRankGetsItsOwnNode) {
  View view = GangCluster(3, 2);
  const std::vector<json> ranks = {GangRank(view, "g", 0, 2), GangRank(view, "g", 1, 2)};
  const GangPlacement placed = PlaceGang(view, ranks);
  ASSERT_TRUE(placed.fits) << placed.message;
  ASSERT_EQ(placed.nodes.size(), 2u);
  EXPECT_NE(placed.nodes[0], placed.nodes[1]);
}

TEST(GangPlacementTest, OneGpuPerRankStillNeedsDistinctNodes) {
  // Two ranks of one GPU would fit on node-0's two GPUs, but not together.
  View view = GangCluster(1, 2);
  const std::vector<json> ranks = {GangRank(view, "g", 0, 1), GangRank(view, "g", 1, 1)};
  const GangPlacement placed = PlaceGang(view, ranks);
  EXPECT_FALSE(placed.fits);
  EXPECT_EQ(placed.first_unplaced, 1);
  EXPECT_THAT(placed.nodes, ElementsAre("node-0"));
  EXPECT_THAT(placed.message, HasSubstr("rank 1: 0/1 nodes are available"));
  EXPECT_THAT(placed.message, HasSubstr("didn't match pod anti-affinity rules"));
}

TEST(GangPlacementTest, TakenGpusCountAndTheRanksNeverShareADevice) {
  View view = GangCluster(2, 2);
  AddRunning(view, "busy", "node-1", {"gpu-0"}, "bob");
  // node-1 has one GPU left: a gang of 2 x 2 does not fit, 2 x 1 does.
  const std::vector<json> big = {GangRank(view, "big", 0, 2), GangRank(view, "big", 1, 2)};
  const GangPlacement no = PlaceGang(view, big);
  EXPECT_FALSE(no.fits);
  EXPECT_THAT(no.message, HasSubstr("rank 1"));
  const std::vector<json> small = {GangRank(view, "small", 0, 1), GangRank(view, "small", 1, 1)};
  const GangPlacement yes = PlaceGang(view, small);
  ASSERT_TRUE(yes.fits) << yes.message;
  EXPECT_NE(yes.nodes[0], yes.nodes[1]);
}

// Before a gang exists: whether it fits now, and whether it ever could.
TEST(GangPlacementTest, ANewGangIsPlannedNowAndOnAnIdleCluster) {
  View view = GangCluster(2, 1);
  AddRunning(view, "busy", "node-1", {"gpu-0"}, "bob");
  json rank = Pod("team", "template", "");
  rank["metadata"]["labels"]["canhazgpu.dev/run"] = "new";
  rank["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {{"labelSelector", {{"matchLabels", {{"canhazgpu.dev/run", "new"}}}}},
       {"topologyKey", "kubernetes.io/hostname"}}};
  const json one_gpu = Claim("team", "x", {Request("gpu", kGpuClass, 1)})["spec"];
  EXPECT_FALSE(PlaceNewGang(view, rank, one_gpu, "team", 2, /*idle=*/false).fits);
  EXPECT_TRUE(PlaceNewGang(view, rank, one_gpu, "team", 2, /*idle=*/true).fits);
  const GangPlacement three = PlaceNewGang(view, rank, one_gpu, "team", 3, /*idle=*/true);
  EXPECT_FALSE(three.fits);
  EXPECT_EQ(three.first_unplaced, 2);
  // The plan changed nothing in the view.
  EXPECT_EQ(view.claims.size(), 1u);
}

}  // namespace
}  // namespace canhazgpu::clusterview
