#include "kubesim/pod_rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

json PodWithGates(std::vector<std::string> gates, const std::string& node = "") {
  json pod = {{"spec", {{"containers", json::array()}}}};
  for (const std::string& g : gates) pod["spec"]["schedulingGates"].push_back({{"name", g}});
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

TEST(PodRulesTest, GatesMayBeSetAtCreationAndOnlyRemovedAfter) {
  const json gated = PodWithGates({"a", "b"});
  EXPECT_TRUE(CheckSchedulingGates(gated, nullptr).empty());
  const json fewer = PodWithGates({"b"});
  EXPECT_TRUE(CheckSchedulingGates(fewer, &gated).empty());
  EXPECT_TRUE(CheckSchedulingGates(PodWithGates({}), &gated).empty());

  const std::vector<kube::StatusCause> added =
      CheckSchedulingGates(PodWithGates({"b", "c"}), &gated);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].field, "spec.schedulingGates");
  EXPECT_EQ(added[0].message,
            "Forbidden: only deletion is allowed, but found new scheduling gate 'c'");
}

TEST(PodRulesTest, AGatedPodCannotNameItsNodeAndGatesAreUnique) {
  const std::vector<kube::StatusCause> bound =
      CheckSchedulingGates(PodWithGates({"a"}, "n"), nullptr);
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_EQ(bound[0].field, "spec.nodeName");
  EXPECT_TRUE(CheckSchedulingGates(PodWithGates({}, "n"), nullptr).empty());

  const std::vector<kube::StatusCause> twice =
      CheckSchedulingGates(PodWithGates({"a", "a"}), nullptr);
  ASSERT_EQ(twice.size(), 1u);
  EXPECT_EQ(twice[0].field, "spec.schedulingGates[1].name");
}

}  // namespace
}  // namespace canhazgpu::kubesim
