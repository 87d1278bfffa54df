#include "config/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Error(const std::string& path, const std::string& text) {
  auto file = ParseConfigText(path, text);
  return file.ok() ? "" : std::string(file.status().message());
}

TEST(ConfigFileTest, YamlNestedKeysBecomeDottedWithLines) {
  auto file = ParseConfigText("c.yaml",
                              "memory-threshold: 2048\n"
                              "run:\n"
                              "  timeout: 2h\n"
                              "remote_hosts:\n"
                              "  - gpu1\n"
                              "  - gpu2\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->values.at("memory-threshold").text, "2048");
  EXPECT_EQ(file->values.at("memory-threshold").line, 1);
  EXPECT_EQ(file->values.at("run.timeout").text, "2h");
  EXPECT_EQ(file->values.at("run.timeout").line, 3);
  EXPECT_TRUE(file->values.at("remote_hosts").is_list);
  EXPECT_THAT(file->values.at("remote_hosts").list, ElementsAre("gpu1", "gpu2"));
}

TEST(ConfigFileTest, JsonKeysCarryTheirLine) {
  auto file = ParseConfigText("c.json",
                              "{\n"
                              "  \"status\": {\"json\": true},\n"
                              "  \"reserve\": {\n"
                              "    \"duration\": \"2h\"\n"
                              "  },\n"
                              "  \"remote_hosts\": [\"a\", \"b\"]\n"
                              "}\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->values.at("status.json").text, "true");
  EXPECT_EQ(file->values.at("status.json").line, 2);
  EXPECT_EQ(file->values.at("reserve.duration").text, "2h");
  EXPECT_EQ(file->values.at("reserve.duration").line, 4);
  EXPECT_THAT(file->values.at("remote_hosts").list, ElementsAre("a", "b"));
}

TEST(ConfigFileTest, TomlTablesAndLines) {
  auto file = ParseConfigText("c.toml",
                              "memory-threshold = 512\n"
                              "\n"
                              "[web]\n"
                              "port = 9090\n"
                              "host = \"127.0.0.1\"\n");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->values.at("memory-threshold").text, "512");
  EXPECT_EQ(file->values.at("web.port").text, "9090");
  EXPECT_EQ(file->values.at("web.port").line, 4);
  EXPECT_EQ(file->values.at("web.host").text, "127.0.0.1");
}

TEST(ConfigFileTest, SyntaxErrorsNameFileAndLine) {
  EXPECT_THAT(Error("c.yaml", "a: 1\nb: [1, 2\n"), HasSubstr("c.yaml:"));
  EXPECT_THAT(Error("c.json", "{\n\"a\": 1,\n}\n"), HasSubstr("c.json:3:"));
  EXPECT_THAT(Error("c.toml", "a = 1\nb = = 2\n"), HasSubstr("c.toml:2:"));
}

TEST(ConfigFileTest, RejectsShapesThatAreNotSettings) {
  EXPECT_THAT(Error("c.yaml", "- a\n- b\n"), HasSubstr("expected a map"));
  EXPECT_THAT(Error("c.json", "[1]"), HasSubstr("expected an object"));
  EXPECT_THAT(Error("c.yaml", "a:\n  - {b: 1}\n"), HasSubstr("a: expected a list of values"));
  EXPECT_THAT(Error("c.yaml", "a:\n"), HasSubstr("c.yaml:1: a: no value"));
  EXPECT_THAT(Error("c.ini", "a=1"), HasSubstr("unknown config format"));
}

TEST(ConfigFileTest, EmptyYamlIsNoSettings) {
  auto file = ParseConfigText("c.yaml", "");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->values.empty());
}

TEST(ConfigFileTest, MissingFileIsNotFound) {
  auto file = LoadConfigFile("/nonexistent/canhazgpu.yaml");
  EXPECT_TRUE(absl::IsNotFound(file.status()));
}

}  // namespace
}  // namespace canhazgpu::config
