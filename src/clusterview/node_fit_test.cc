// NodeMismatch's required node affinity, as kube-scheduler's NodeAffinity
// plugin reads nodeSelectorTerms.
#include "clusterview/node_fit.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using nlohmann::json;

constexpr char kAffinityMismatch[] = "node(s) didn't match Pod's node affinity/selector";

json ReadyNode(const std::string& name, json labels) {
  return {{"metadata", {{"name", name}, {"labels", std::move(labels)}}},
          {"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json PodWithTerms(const std::vector<json>& terms) {
  return {{"spec",
           {{"affinity",
             {{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 {{"nodeSelectorTerms", terms}}}}}}}}}};
}

// (Vectors, not braced json: a one-element braced list would be a copy of
// its element, not an array.)
json Expression(const std::string& key, const std::string& op,
                const std::vector<std::string>& values = {}) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

json Term(const std::vector<json>& expressions, const std::vector<json>& fields = {}) {
  json t = json::object();
  if (!expressions.empty()) t["matchExpressions"] = expressions;
  if (!fields.empty()) t["matchFields"] = fields;
  return t;
}

const json kNode = ReadyNode("node-a", {{"gpu", "h100"}, {"gpus", "8"}});

bool Fits(const std::vector<json>& expressions) {
  return NodeMismatch(PodWithTerms({Term(expressions)}), kNode).empty();
}

TEST(NodeFitTest, PodWithoutAffinityFitsAnyNode) {
  EXPECT_EQ(NodeMismatch({{"spec", json::object()}}, kNode), "");
}

TEST(NodeFitTest, MatchExpressionOperatorsReadTheNodeLabels) {
  EXPECT_TRUE(Fits({Expression("gpu", "In", {"a100", "h100"})}));
  EXPECT_FALSE(Fits({Expression("gpu", "In", {"a100"})}));
  EXPECT_FALSE(Fits({Expression("zone", "In", {"a"})}));
  EXPECT_TRUE(Fits({Expression("gpu", "NotIn", {"a100"})}));
  EXPECT_FALSE(Fits({Expression("gpu", "NotIn", {"h100"})}));
  EXPECT_TRUE(Fits({Expression("zone", "NotIn", {"a"})}));  // absent label: not in
  EXPECT_TRUE(Fits({Expression("gpu", "Exists")}));
  EXPECT_FALSE(Fits({Expression("zone", "Exists")}));
  EXPECT_TRUE(Fits({Expression("zone", "DoesNotExist")}));
  EXPECT_FALSE(Fits({Expression("gpu", "DoesNotExist")}));
  EXPECT_TRUE(Fits({Expression("gpus", "Gt", {"4"})}));
  EXPECT_FALSE(Fits({Expression("gpus", "Gt", {"8"})}));
  EXPECT_TRUE(Fits({Expression("gpus", "Lt", {"9"})}));
  EXPECT_FALSE(Fits({Expression("gpus", "Lt", {"8"})}));
  EXPECT_FALSE(Fits({Expression("gpu", "Gt", {"1"})}));  // not an integer
  EXPECT_FALSE(Fits({Expression("gpu", "Sort-of", {"h100"})}));
}

TEST(NodeFitTest, ExpressionsAndFieldsOfATermAreAnded) {
  EXPECT_TRUE(Fits({Expression("gpu", "In", {"h100"}), Expression("gpus", "Gt", {"1"})}));
  EXPECT_FALSE(Fits({Expression("gpu", "In", {"h100"}), Expression("gpus", "Gt", {"9"})}));
  const json name_a = Expression("metadata.name", "In", {"node-a"});
  EXPECT_EQ(NodeMismatch(PodWithTerms({Term({Expression("gpu", "Exists")}, {name_a})}), kNode), "");
  EXPECT_EQ(NodeMismatch(PodWithTerms({Term({Expression("zone", "Exists")}, {name_a})}), kNode),
            kAffinityMismatch);
}

TEST(NodeFitTest, MatchFieldsKnowOnlyTheNodeName) {
  auto fits = [](const json& field) {
    return NodeMismatch(PodWithTerms({Term({}, {field})}), kNode).empty();
  };
  EXPECT_TRUE(fits(Expression("metadata.name", "In", {"node-b", "node-a"})));
  EXPECT_FALSE(fits(Expression("metadata.name", "In", {"node-b"})));
  EXPECT_TRUE(fits(Expression("metadata.name", "NotIn", {"node-b"})));
  EXPECT_FALSE(fits(Expression("metadata.name", "NotIn", {"node-a"})));
  EXPECT_FALSE(fits(Expression("metadata.name", "Exists")));
  EXPECT_FALSE(fits(Expression("spec.providerID", "In", {"node-a"})));
}

TEST(NodeFitTest, TermsAreOredAndEmptyOnesMatchNothing) {
  const json wrong = Term({Expression("gpu", "In", {"b200"})});
  const json right = Term({Expression("gpu", "In", {"h100"})});
  EXPECT_EQ(NodeMismatch(PodWithTerms({wrong, right}), kNode), "");
  EXPECT_EQ(NodeMismatch(PodWithTerms({wrong}), kNode), kAffinityMismatch);
  EXPECT_EQ(NodeMismatch(PodWithTerms({}), kNode), kAffinityMismatch);
  EXPECT_EQ(NodeMismatch(PodWithTerms({json::object()}), kNode), kAffinityMismatch);
  EXPECT_EQ(NodeMismatch(PodWithTerms({json::object(), right}), kNode), "");
}

TEST(NodeFitTest, NodeSelectorAndAffinityMustBothHold) {
  json pod = PodWithTerms({Term({Expression("gpu", "Exists")})});
  pod["spec"]["nodeSelector"] = {{"gpu", "b200"}};
  EXPECT_EQ(NodeMismatch(pod, kNode), kAffinityMismatch);
  pod["spec"]["nodeSelector"] = {{"gpu", "h100"}};
  EXPECT_EQ(NodeMismatch(pod, kNode), "");
}

}  // namespace
}  // namespace canhazgpu::clusterview
