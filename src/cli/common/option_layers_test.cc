#include "cli/common/option_layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace canhazgpu::cli {
namespace {

using ::testing::HasSubstr;

const OptionScope kRun = {
    "run",
    {
        {.name = "gpus", .has_value = true, .kind = FlagKind::kPositiveInt, .default_value = "1"},
        {.name = "timeout", .has_value = true, .kind = FlagKind::kDuration},
        {.name = "nonblock", .overrides = "wait"},
        {.name = "wait", .has_value = true, .kind = FlagKind::kDuration, .overrides = "nonblock"},
    }};
const OptionScope kGlobal = {
    "",
    {
        {.name = "memory-threshold",
         .has_value = true,
         .kind = FlagKind::kCount,
         .default_value = "1024"},
        {.name = "remote_hosts", .has_value = true, .kind = FlagKind::kList, .config_only = true},
    }};

class OptionLayersTest : public ::testing::Test {
 protected:
  OptionSources Sources() {
    return {.file = &file_,
            .getenv = [this](const std::string& name) -> std::optional<std::string> {
              auto it = env_.find(name);
              if (it == env_.end()) return std::nullopt;
              return it->second;
            }};
  }
  absl::StatusOr<ParsedFlags> Resolve(const std::vector<std::string>& args,
                                      const OptionScope& scope = kRun) {
    auto flags = ParseFlags(args, scope.specs, scope.scope);
    if (!flags.ok()) return flags.status();
    if (absl::Status s = ApplyOptionLayers(scope, Sources(), *flags); !s.ok()) return s;
    return flags;
  }
  void SetFile(const std::string& key, const std::string& text, int line) {
    file_.values[key] = {.text = text, .line = line};
  }

  config::ConfigFile file_{.path = "/etc/c.yaml"};
  std::map<std::string, std::string> env_;
};

TEST_F(OptionLayersTest, Issue14NumbersFromEveryLayerAreRangeChecked) {
  SetFile("memory-threshold", "17592186044416", 2);
  EXPECT_THAT(Resolve({}, kGlobal).status().message(),
              HasSubstr("/etc/c.yaml:2: memory-threshold: invalid value '17592186044416': "
                        "expected an integer from 0 to 2147483647"));
  env_["CANHAZGPU_RUN_GPUS"] = "4294967297";
  EXPECT_THAT(Resolve({}).status().message(),
              HasSubstr("CANHAZGPU_RUN_GPUS: invalid value '4294967297': expected an integer "
                        "from 1 to 2147483647"));
}

TEST_F(OptionLayersTest, Issue14NulInAConfigValueIsRejectedWithoutEchoingIt) {
  SetFile("remote_hosts", std::string("a\0b", 3), 4);
  EXPECT_EQ(Resolve({}, kGlobal).status().message(),
            "/etc/c.yaml:4: remote_hosts: contains a NUL byte");
}

TEST(OptionNamesTest, EnvNameMapsDotsAndDashesToUnderscores) {
  EXPECT_EQ(EnvName("run.timeout"), "CANHAZGPU_RUN_TIMEOUT");
  EXPECT_EQ(EnvName("memory-threshold"), "CANHAZGPU_MEMORY_THRESHOLD");
  EXPECT_EQ(EnvName("memory.threshold"), "CANHAZGPU_MEMORY_THRESHOLD");
  EXPECT_EQ(EnvName("node-name", "K8SHAZGPU_"), "K8SHAZGPU_NODE_NAME");
  EXPECT_EQ(OptionKey("", "state"), "state");
  EXPECT_EQ(OptionKey("reserve", "duration"), "reserve.duration");
}

TEST_F(OptionLayersTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  auto defaults = Resolve({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->Value("gpus"), "1");
  EXPECT_EQ(defaults->origins["gpus"].source, FlagSource::kDefault);
  EXPECT_FALSE(defaults->Has("timeout"));

  SetFile("run.gpus", "3", 7);
  auto from_file = Resolve({});
  EXPECT_EQ(from_file->Value("gpus"), "3");
  EXPECT_EQ(DescribeOrigin(from_file->origins["gpus"]), "/etc/c.yaml:7");

  env_["CANHAZGPU_RUN_GPUS"] = "2";
  auto from_env = Resolve({});
  EXPECT_EQ(from_env->Value("gpus"), "2");
  EXPECT_EQ(DescribeOrigin(from_env->origins["gpus"]), "CANHAZGPU_RUN_GPUS");

  auto from_flag = Resolve({"--gpus", "4"});
  EXPECT_EQ(from_flag->Value("gpus"), "4");
  EXPECT_EQ(DescribeOrigin(from_flag->origins["gpus"]), "command line");
}

// k8shazgpu-node reads K8SHAZGPU_<FLAG>, as its DaemonSet sets them.
TEST_F(OptionLayersTest, AnotherProgramsPrefixNamesItsVariables) {
  env_["CANHAZGPU_RUN_GPUS"] = "2";
  env_["K8SHAZGPU_RUN_GPUS"] = "5";
  OptionSources sources = Sources();
  sources.env_prefix = "K8SHAZGPU_";
  absl::StatusOr<ParsedFlags> flags = ParseFlags({}, kRun.specs, kRun.scope);
  ASSERT_TRUE(flags.ok());
  ASSERT_TRUE(ApplyOptionLayers(kRun, sources, *flags).ok());
  EXPECT_EQ(flags->Value("gpus"), "5");
  EXPECT_EQ(DescribeOrigin(flags->origins["gpus"]), "K8SHAZGPU_RUN_GPUS");
}

TEST_F(OptionLayersTest, FileKeysMatchWhateverTheSeparator) {
  SetFile("memory.threshold", "2048", 2);
  auto flags = Resolve({}, kGlobal);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->Value("memory-threshold"), "2048");
}

TEST_F(OptionLayersTest, BadValuesNameTheirOrigin) {
  SetFile("run.timeout", "soon", 4);
  EXPECT_THAT(std::string(Resolve({}).status().message()),
              HasSubstr("/etc/c.yaml:4: run.timeout: invalid duration 'soon'"));
  env_["CANHAZGPU_RUN_TIMEOUT"] = "later";
  EXPECT_THAT(std::string(Resolve({}).status().message()),
              HasSubstr("CANHAZGPU_RUN_TIMEOUT: invalid duration 'later'"));
  EXPECT_THAT(std::string(Resolve({"--gpus", "0"}).status().message()),
              HasSubstr("invalid value '0' for --gpus: expected an integer from 1 to"));
}

TEST_F(OptionLayersTest, SwitchesFromEnvAndFile) {
  SetFile("run.nonblock", "yes", 1);
  EXPECT_TRUE(Resolve({})->Has("nonblock"));
  env_["CANHAZGPU_RUN_NONBLOCK"] = "false";
  auto off = Resolve({});
  EXPECT_FALSE(off->Has("nonblock"));
  EXPECT_EQ(off->origins["nonblock"].source, FlagSource::kEnvironment);
  env_["CANHAZGPU_RUN_NONBLOCK"] = "maybe";
  EXPECT_THAT(std::string(Resolve({}).status().message()), HasSubstr("expected true or false"));
}

TEST_F(OptionLayersTest, HigherLayerWinsAContradiction) {
  SetFile("run.nonblock", "true", 1);
  auto flags = Resolve({"--wait", "5m"});
  ASSERT_TRUE(flags.ok());
  EXPECT_FALSE(flags->Has("nonblock"));
  EXPECT_EQ(flags->Value("wait"), "5m");
  auto both = Resolve({"--wait", "5m", "--nonblock"});  // the command rejects these
  EXPECT_TRUE(both->Has("nonblock") && both->Has("wait"));
}

TEST_F(OptionLayersTest, ListsFromFileAndEnvironment) {
  file_.values["remote_hosts"] = {.list = {"a", "b"}, .is_list = true, .line = 3};
  EXPECT_EQ(Resolve({}, kGlobal)->Value("remote_hosts"), "a,b");
  env_["CANHAZGPU_REMOTE_HOSTS"] = "c";
  EXPECT_EQ(Resolve({}, kGlobal)->Value("remote_hosts"), "c");
  // Config-only: not a command-line flag.
  EXPECT_FALSE(Resolve({"--remote_hosts", "x"}, kGlobal).ok());
}

TEST_F(OptionLayersTest, CheckConfigFileRejectsUnknownKeysAndBadValues) {
  SetFile("run.timout", "2h", 5);
  absl::Status s = CheckConfigFile(file_, {kRun, kGlobal});
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("/etc/c.yaml:5: unknown key 'run.timout' (did you mean 'run.timeout'?)"));
  file_.values.clear();
  SetFile("run.gpus", "many", 2);
  EXPECT_THAT(std::string(CheckConfigFile(file_, {kRun, kGlobal}).message()),
              HasSubstr("/etc/c.yaml:2: run.gpus: invalid value 'many'"));
  file_.values.clear();
  file_.values["run.gpus"] = {.list = {"1"}, .is_list = true, .line = 9};
  EXPECT_THAT(std::string(CheckConfigFile(file_, {kRun, kGlobal}).message()),
              HasSubstr("expected a single value"));
  file_.values.clear();
  SetFile("memory_threshold", "10", 1);
  EXPECT_TRUE(CheckConfigFile(file_, {kRun, kGlobal}).ok());
}

}  // namespace
}  // namespace canhazgpu::cli
