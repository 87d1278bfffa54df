#include "kubesim/selectors.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

bool LabelsMatch(const std::string& selector, const json& labels) {
  auto s = LabelSelector::Parse(selector);
  EXPECT_TRUE(s.ok()) << selector << ": " << s.status();
  return s.ok() && s->Matches(labels);
}

TEST(LabelSelectorTest, EveryOperatorAsTheServerReadsIt) {
  const json labels = {{"app", "vllm"}, {"tier", "gpu"}, {"gen", "3"}};
  EXPECT_TRUE(LabelsMatch("", labels));
  EXPECT_TRUE(LabelsMatch("app=vllm", labels));
  EXPECT_TRUE(LabelsMatch("app==vllm,tier=gpu", labels));
  EXPECT_FALSE(LabelsMatch("app=vllm,tier=cpu", labels));
  EXPECT_TRUE(LabelsMatch("app!=other", labels));
  EXPECT_TRUE(LabelsMatch("missing!=x", labels)) << "!= holds where the label is absent";
  EXPECT_TRUE(LabelsMatch("tier in (cpu, gpu)", labels));
  EXPECT_FALSE(LabelsMatch("tier notin (cpu,gpu)", labels));
  EXPECT_TRUE(LabelsMatch("missing notin (a)", labels));
  EXPECT_TRUE(LabelsMatch("app", labels));
  EXPECT_FALSE(LabelsMatch("!app", labels));
  EXPECT_TRUE(LabelsMatch("!missing", labels));
  EXPECT_TRUE(LabelsMatch("gen>2", labels));
  EXPECT_FALSE(LabelsMatch("gen<3", labels));
  EXPECT_FALSE(LabelsMatch("app", json()));
  EXPECT_TRUE(LabelsMatch("app.kubernetes.io/name notin (x)", json::object()));
}

TEST(LabelSelectorTest, BadSelectorsAreErrors) {
  for (const char* bad : {"a=b,", "tier in gpu", "a b=c", "=x"}) {
    EXPECT_FALSE(LabelSelector::Parse(bad).ok()) << bad;
  }
}

TEST(FieldSelectorTest, MatchesPathsIntoTheObject) {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}}},
                    {"spec", {{"nodeName", "n1"}, {"unschedulable", true}}}};
  auto s = FieldSelector::Parse("metadata.name=p,spec.nodeName!=n2");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->Matches(pod));
  EXPECT_EQ(s->Fields(), (std::vector<std::string>{"metadata.name", "spec.nodeName"}));
  EXPECT_FALSE(FieldSelector::Parse("spec.nodeName==n2")->Matches(pod));
  EXPECT_TRUE(FieldSelector::Parse("spec.unschedulable=true")->Matches(pod));
  EXPECT_TRUE(FieldSelector::Parse("spec.missing=")->Matches(pod));
  EXPECT_FALSE(FieldSelector::Parse("spec.nodeName").ok());
}

}  // namespace
}  // namespace canhazgpu::kubesim
