// Options from the command line, CANHAZGPU_* variables and config files, end
// to end through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class CliConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CliResult admin = host_.Run({"admin", "--provider", "fake", "--gpus", "4"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  std::string HomeConfig() const { return host_.dir() + "/.canhazgpu.yaml"; }
  json Show() {
    CliResult r = host_.Run({"config", "show", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  int InUse() {
    int n = 0;
    for (const json& g : json::parse(host_.Run({"status", "--json"}).out))
      n += g["status"] == "IN_USE";
    return n;
  }

  CliHost host_;
};

TEST_F(CliConfigTest, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  EXPECT_EQ(host_.Run({"reserve", "--short"}).out, "0");
  host_.Run({"release"});

  WriteFile(HomeConfig(), "reserve:\n  gpus: 3\n  duration: 2h\n");
  CliResult from_file = host_.Run({"reserve"});
  EXPECT_THAT(from_file.out, HasSubstr("Reserved 3 GPU(s): 0,1,2 for 2h"));
  host_.Run({"release"});

  host_.env()["CANHAZGPU_RESERVE_GPUS"] = "2";
  CliResult from_env = host_.Run({"reserve"});
  EXPECT_THAT(from_env.out, HasSubstr("Reserved 2 GPU(s): 0,1 for 2h"));
  host_.Run({"release"});

  CliResult from_flag = host_.Run({"reserve", "--gpus", "1", "-d", "5m"});
  EXPECT_THAT(from_flag.out, HasSubstr("for 0h 5m 0s"));

  json shown = Show();
  EXPECT_EQ(shown["config_file"], HomeConfig());
  EXPECT_EQ(shown["options"]["reserve.gpus"]["value"], "2");
  EXPECT_EQ(shown["options"]["reserve.gpus"]["source"], "CANHAZGPU_RESERVE_GPUS");
  EXPECT_EQ(shown["options"]["reserve.duration"]["source"], HomeConfig() + ":3");
  EXPECT_EQ(shown["options"]["run.grace"]["value"], "30s");
  EXPECT_EQ(shown["options"]["run.grace"]["source"], "default");
  EXPECT_EQ(shown["options"]["run.timeout"]["value"], nullptr);
  EXPECT_EQ(shown["options"]["memory-threshold"]["env"], "CANHAZGPU_MEMORY_THRESHOLD");
}

// Issue 33: help shows the state file in effect, CANHAZGPU_STATE's when it
// is set (the harness sets it), not the built-in default.
TEST_F(CliConfigTest, HelpShowsTheStateFileInEffect) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"status", "--help"}}) {
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("(default " + host_.state() + ", from CANHAZGPU_STATE)"));
    EXPECT_THAT(r.out, Not(HasSubstr("/var/lib/canhazgpu/state.db")));
  }
  host_.env().erase("CANHAZGPU_STATE");
  EXPECT_THAT(host_.Run({"status", "--help"}).out,
              HasSubstr("state file (default /var/lib/canhazgpu/state.db)\n"));
}

TEST_F(CliConfigTest, ExplicitJsonAndTomlFiles) {
  const std::string json_path = host_.dir() + "/c.json";
  WriteFile(json_path, R"({"reserve": {"gpus": 2}, "memory-threshold": 2048})");
  CliResult r = host_.Run({"reserve", "--config", json_path});
  EXPECT_THAT(r.out, HasSubstr("Reserved 2 GPU(s)")) << r.err;
  host_.Run({"release"});

  const std::string toml_path = host_.dir() + "/c.toml";
  WriteFile(toml_path, "[reserve]\ngpus = 4\n");
  host_.env()["CANHAZGPU_CONFIG"] = toml_path;
  EXPECT_THAT(host_.Run({"reserve"}).out, HasSubstr("Reserved 4 GPU(s)"));
  EXPECT_EQ(Show()["config_file"], toml_path);
}

TEST_F(CliConfigTest, MemoryThresholdUnderEveryName) {
  WriteFile(HomeConfig(), "memory:\n  threshold: 4096\n");
  json shown = Show();
  EXPECT_EQ(shown["options"]["memory-threshold"]["value"], "4096");
  EXPECT_EQ(shown["options"]["memory-threshold"]["source"], HomeConfig() + ":2");
  host_.env()["CANHAZGPU_MEMORY_THRESHOLD"] = "10";
  EXPECT_EQ(Show()["options"]["memory-threshold"]["value"], "10");
}

TEST_F(CliConfigTest, ConfigFileSettingsForEveryCommand) {
  // status reads its own section too (the tool we replace ignored it).
  WriteFile(HomeConfig(), "status:\n  json: true\nrun:\n  nonblock: true\n");
  CliResult status = host_.Run({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out).size(), 4u);
  // A --wait flag beats nonblock from the file instead of contradicting it.
  CliResult run = host_.Run({"run", "--wait", "1m", "--", "true"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST_F(CliConfigTest, BadFilesAreErrorsNamingFileKeyAndLineAndChangeNothing) {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"reserve:\n  gpus: 2\n  duratoin: 1h\n",
       ":3: unknown key 'reserve.duratoin' (did you mean 'reserve.duration'?)"},
      {"reserve:\n  duration: forever\n", ":2: reserve.duration: invalid duration 'forever'"},
      {"memory-threshold: lots\n",
       ":1: memory-threshold: invalid value 'lots': expected an integer"},
      {"status:\n  json: maybe\n",
       ":2: status.json: invalid value 'maybe': expected true or false"},
      {"reserve: [1, 2\n", ".canhazgpu.yaml:"},
      {"remote_hosts: {a: 1}\n", "unknown key 'remote_hosts.a'"},
  };
  for (const Case& c : cases) {
    WriteFile(HomeConfig(), c.text);
    CliResult r = host_.Run({"reserve"});
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_THAT(r.err, HasSubstr(c.error)) << c.text;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  std::remove(HomeConfig().c_str());
  EXPECT_EQ(InUse(), 0);
  CliResult missing = host_.Run({"status", "--config", "/nonexistent/c.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot read config file /nonexistent/c.yaml"));
  host_.env()["CANHAZGPU_RESERVE_GPUS"] = "zero";
  CliResult bad_env = host_.Run({"reserve"});
  EXPECT_EQ(bad_env.exit_code, 2);
  EXPECT_THAT(bad_env.err, HasSubstr("CANHAZGPU_RESERVE_GPUS: invalid value 'zero'"));
  EXPECT_EQ(InUse(), 0);
}

TEST_F(CliConfigTest, ShowTableListsEveryOption) {
  CliResult r = host_.Run({"config", "show"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The Go tool's places first ($HOME, then the current directory), ours last.
  EXPECT_THAT(r.out,
              HasSubstr("config file: none (looked for " + host_.dir() + "/.canhazgpu.json"));
  EXPECT_THAT(r.out, HasSubstr(HomeConfig() + ", "));
  EXPECT_THAT(r.out, HasSubstr("./.canhazgpu.yaml, "));
  EXPECT_THAT(r.out, HasSubstr(", /etc/canhazgpu/config.yaml)"));
  EXPECT_THAT(r.out, HasSubstr("state"));
  EXPECT_THAT(r.out, HasSubstr("run.timeout"));
  EXPECT_THAT(r.out, HasSubstr("remote_hosts"));
  EXPECT_EQ(host_.Run({"config", "edit"}).exit_code, 2);
}

}  // namespace
}  // namespace canhazgpu::testing
