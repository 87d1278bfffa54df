#include "kube/label_selector.h"

#include "gtest/gtest.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

TEST(LabelSelectorTest, MatchLabelsAndExpressionsMustAllHold) {
  const json selector = json::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["a", "b"]},
      {"key": "canary", "operator": "DoesNotExist"},
      {"key": "zone", "operator": "NotIn", "values": ["z"]},
      {"key": "team", "operator": "Exists"}]})");
  EXPECT_TRUE(SelectsLabels(selector, {{"app", "web"}, {"tier", "b"}, {"team", "x"}}));
  EXPECT_FALSE(SelectsLabels(selector, {{"app", "db"}, {"tier", "b"}, {"team", "x"}}));
  EXPECT_FALSE(SelectsLabels(selector, {{"app", "web"}, {"tier", "c"}, {"team", "x"}}));
  EXPECT_FALSE(SelectsLabels(selector, {{"app", "web"}, {"tier", "a"}}));
  EXPECT_FALSE(
      SelectsLabels(selector, {{"app", "web"}, {"tier", "a"}, {"team", "x"}, {"canary", "1"}}));
  EXPECT_FALSE(
      SelectsLabels(selector, {{"app", "web"}, {"tier", "a"}, {"team", "x"}, {"zone", "z"}}));
  EXPECT_EQ(LabelSelectorText(selector), "app=web,tier in (a,b),!canary,zone notin (z),team");
}

TEST(LabelSelectorTest, EmptySelectsAllNullAndBadOperatorsSelectNothing) {
  EXPECT_TRUE(SelectsLabels(json::object(), json()));
  EXPECT_TRUE(SelectsLabels(json::object(), {{"a", "b"}}));
  EXPECT_FALSE(SelectsLabels(json(), {{"a", "b"}}));
  EXPECT_FALSE(SelectsLabels(
      json::parse(R"({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})"),
      {{"a", "2"}}));
  EXPECT_FALSE(SelectsLabels(
      json::parse(R"({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]})"),
      {{"b", "2"}}));
}

}  // namespace
}  // namespace canhazgpu::kube
