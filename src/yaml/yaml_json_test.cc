#include "yaml/yaml_json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::yaml {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(YamlJsonTest, ScalarsAreTypedAsKubernetesReadsThem) {
  auto doc = ToJson("a: 1\nb: \"1\"\nc: true\nd: ~\ne: 1.5\nf: yes\ng: text\nh: 0x10\n");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc, json::parse(R"({"a":1,"b":"1","c":true,"d":null,"e":1.5,"f":"yes",
                                  "g":"text","h":16})"));
}

TEST(YamlJsonTest, ScalarsAsTextKeepWhatWasWritten) {
  auto doc = ToJson("a: 0x10\nb: 1e3\nc: True\nd: [1, x]\n", {.scalars_as_text = true});
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc, json::parse(R"({"a":"0x10","b":"1e3","c":"True","d":["1","x"]})"));
}

TEST(YamlJsonTest, LinesAreRecordedByJsonPointer) {
  auto doc = ReadDocument("a:\n  b: 1\n  c/d: [x,\n    y]\ne:\n", {.record_lines = true});
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->LineOf(""), 1);
  EXPECT_EQ(doc->LineOf("/a/b"), 2);
  EXPECT_EQ(doc->LineOf("/a/c~1d"), 3);
  EXPECT_EQ(doc->LineOf("/a/c~1d/1"), 4);
  EXPECT_EQ(doc->LineOf("/e"), 5) << "a null value is at its key's line";
  EXPECT_EQ(doc->LineOf("/nothing"), 0);
  EXPECT_TRUE(ToJson("a: 1\n")->is_object());
}

TEST(YamlJsonTest, AParseErrorNamesItsLine) {
  ReadError error;
  auto doc = ReadDocument("a: 1\nb: [\n", {}, &error);
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(doc.status().message(), HasSubstr("line 3: "));
  EXPECT_EQ(error.line, 3);
  EXPECT_FALSE(error.message.empty());
}

TEST(YamlJsonTest, DepthIsBounded) {
  std::string deep;
  for (int i = 0; i < 10; ++i) deep += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  deep += std::string(10, ' ') + "a: 1\n";
  EXPECT_TRUE(ToJson(deep, {.max_depth = 11}).ok());
  ReadError error;
  auto refused = ReadDocument(deep, {.max_depth = 10}, &error);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "line 11: nested deeper than 10 levels");
  EXPECT_EQ(error.line, 11);
}

TEST(YamlJsonTest, AliasBombStopsAtTheValueBound) {
  // Nine levels of ten aliases each would expand to 10^9 values.
  std::string bomb = "l0: &l0 [" + Repeat("lol, ", 9) + "lol]\n";
  for (int level = 1; level < 9; ++level) {
    std::string prev = "*l" + std::to_string(level - 1);
    bomb += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [" +
            Repeat(prev + ", ", 9) + prev + "]\n";
  }
  auto refused = ToJson(bomb, {.max_values = 100000});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "more than 100000 values");
  auto stream = DocumentsToJson("a: 1\n---\n" + bomb, {.max_values = 100000});
  EXPECT_FALSE(stream.ok());
}

TEST(YamlJsonTest, AComplexKeyIsRefused) {
  auto doc = ToJson("? [a, b]\n: 1\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(doc.status().message(), HasSubstr("a key must be a single value"));
}

TEST(YamlJsonTest, AStreamLeavesOutEmptyDocuments) {
  auto docs = DocumentsToJson("# only a comment\n---\na: 1\n---\n---\nb: 2\n---\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1], json::parse(R"({"b":2})"));
  EXPECT_TRUE(ToJson("")->is_null());
}

TEST(YamlJsonTest, BooleansAreReadAsYamlOneOneWritesThem) {
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "y", "Y"}) {
    EXPECT_EQ(BoolOf(yes), true) << yes;
  }
  for (const char* no : {"false", "No", "OFF", "n"}) EXPECT_EQ(BoolOf(no), false) << no;
  for (const char* neither : {"", "tRue", "1", "yess", "t"}) {
    EXPECT_EQ(BoolOf(neither), std::nullopt) << neither;
  }
}

TEST(YamlJsonTest, PointerTokensAreEscaped) { EXPECT_EQ(PointerToken("a/b~c"), "a~1b~0c"); }

}  // namespace
}  // namespace canhazgpu::yaml
