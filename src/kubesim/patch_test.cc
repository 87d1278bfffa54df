#include "kubesim/patch.h"

#include "gtest/gtest.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

TEST(PatchTest, MergePatchRemovesNullsAndReplacesLists) {
  json original = {{"a", 1}, {"b", {{"c", 2}}}, {"l", {1, 2}}};
  auto out =
      ApplyPatch(PatchType::kMerge, original, {{"a", nullptr}, {"b", {{"d", 3}}}, {"l", {3}}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, json({{"b", {{"c", 2}, {"d", 3}}}, {"l", {3}}}));
}

TEST(PatchTest, JsonPatchAppliesOperationsOrFails) {
  json original = {{"spec", {{"n", 1}}}};
  auto out = ApplyPatch(PatchType::kJson, original,
                        json::parse(R"([{"op":"replace","path":"/spec/n","value":2},
                                        {"op":"add","path":"/spec/m","value":3}])"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, json({{"spec", {{"n", 2}, {"m", 3}}}}));
  EXPECT_FALSE(
      ApplyPatch(PatchType::kJson, original, json::parse(R"([{"op":"remove","path":"/nope"}])"))
          .ok());
}

TEST(PatchTest, StrategicMergeMergesNamedListsByName) {
  json pod = json::parse(R"({"spec":{"containers":[
      {"name":"a","image":"a:1","env":[{"name":"X","value":"1"}]},
      {"name":"b","image":"b:1"}]}})");
  json patch = json::parse(R"({"spec":{
      "$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
      "containers":[{"name":"a","image":"a:2"},{"name":"b","$patch":"delete"},
                    {"name":"c","image":"c:1"}]}})");
  auto out = ApplyPatch(PatchType::kStrategic, pod, patch);
  ASSERT_TRUE(out.ok());
  const json& containers = (*out)["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "a:2");
  EXPECT_EQ(containers[0]["env"][0]["value"], "1") << "fields the patch does not name stay";
  EXPECT_EQ(containers[1]["name"], "c");
  EXPECT_FALSE((*out)["spec"].contains("$setElementOrder/containers"));
}

TEST(PatchTest, ApplyBodiesMayBeYaml) {
  auto body = ParsePatchBody(
      PatchType::kApply, "apiVersion: v1\nkind: ConfigMap\ndata:\n  n: '1'\n  m: 2\n  t: true\n");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ((*body)["data"]["n"], "1");
  EXPECT_EQ((*body)["data"]["m"], 2);
  EXPECT_EQ((*body)["data"]["t"], true);
  EXPECT_FALSE(ParsePatchBody(PatchType::kMerge, "a: b").ok()) << "only apply takes YAML";
  EXPECT_FALSE(ParsePatchBody(PatchType::kJson, "{}").ok()) << "a JSON patch is a list";
  EXPECT_EQ(PatchTypeOf("application/merge-patch+json; charset=utf-8"), PatchType::kMerge);
  EXPECT_FALSE(PatchTypeOf("text/plain").has_value());
}

TEST(YamlDocumentsTest, EveryDocumentOfAStreamWithoutTheEmptyOnes) {
  absl::StatusOr<std::vector<json>> docs =
      yaml::DocumentsToJson("# comment only\n---\nkind: A\n---\nkind: B\nn: 1\n---\n# trailing\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0], json({{"kind", "A"}}));
  EXPECT_EQ((*docs)[1], json({{"kind", "B"}, {"n", 1}}));
  absl::StatusOr<std::vector<json>> bad = yaml::DocumentsToJson("kind: A\n---\nkind: [B\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()).rfind("line ", 0), 0u) << bad.status();
}

}  // namespace
}  // namespace canhazgpu::kubesim
