// Habits, config files and scripts from the Go canhazgpu carry over
// (reference/canhazgpu.md §1.2-1.3, §3): global flags anywhere, the Go
// tool's config files and lookup places, its flags, and its JSON names,
// through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class CliGoCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CliResult admin = host_.Run({"admin", "--provider", "fake", "--gpus", "4"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
    work_ = host_.dir() + "/work";
    mkdir(work_.c_str(), 0755);
  }
  json Show(std::vector<std::string> args = {}) {
    args.insert(args.end(), {"config", "show", "--json"});
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  }
  // canhazgpu ARGS... run in `work_` (the current directory the Go tool
  // also searched for .canhazgpu.*).
  CliResult RunInWork(const std::vector<std::string>& args) {
    std::string command = std::string("cd '") + work_ + "' && exec '" + CANHAZGPU_BINARY + "'";
    for (const std::string& a : args) command += " '" + a + "'";
    return RunProgram({"/bin/sh", "-c", command}, host_.env());
  }

  CliHost host_;
  std::string work_;
};

// cobra's and kubectl's convention: every global flag works before the
// command and after it.
TEST_F(CliGoCompatTest, GlobalFlagsWorkBeforeAndAfterTheCommand) {
  const std::string config = host_.dir() + "/other.yaml";
  WriteFile(config, "reserve:\n  gpus: 2\n");
  struct Case {
    std::vector<std::string> flag;
    std::string option;  // in config show
    std::string value;
  };
  const std::vector<Case> cases = {
      {{"--memory-threshold", "512"}, "memory-threshold", "512"},
      {{"--state", host_.state()}, "state", host_.state()},
      {{"--no-color"}, "no-color", "true"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> before = c.flag, after = {"status", "--json"};
    before.insert(before.end(), {"status", "--json"});
    after.insert(after.end(), c.flag.begin(), c.flag.end());
    for (const auto& args : {before, after}) {
      CliResult r = host_.Run(args);
      ASSERT_EQ(r.exit_code, 0) << c.flag[0] << ": " << r.err;
      EXPECT_EQ(json::parse(r.out).size(), 4u) << c.flag[0];
    }
    std::vector<std::string> show_after = {"config", "show", "--json"};
    show_after.insert(show_after.end(), c.flag.begin(), c.flag.end());
    CliResult r = host_.Run(show_after);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["options"][c.option]["value"], c.value) << c.flag[0];
    EXPECT_EQ(Show(c.flag)["options"][c.option]["value"], c.value) << c.flag[0];
  }
  // --config, both places: the file named, not the default.
  EXPECT_EQ(Show({"--config", config})["config_file"], config);
  CliResult after = host_.Run({"config", "show", "--json", "--config", config});
  EXPECT_EQ(json::parse(after.out)["config_file"], config);
  CliResult reserve = host_.Run({"--config", config, "reserve"});
  EXPECT_THAT(reserve.out, HasSubstr("Reserved 2 GPU(s)")) << reserve.err;
  EXPECT_EQ(host_.Run({"--config", config, "status"}).exit_code, 0);
}

// The Go tool's Redis flags are accepted wherever its scripts put them, with
// one notice: the state is the local SQLite file.
TEST_F(CliGoCompatTest, RedisFlagsAreAcceptedWithOneNotice) {
  CliResult before = host_.Run(
      {"--redis-host", "redis.example", "--redis-port", "6380", "--redis-db", "2", "status"});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(LineCount(before.err), 1u) << before.err;
  EXPECT_THAT(before.err,
              HasSubstr("canhazgpu: note: '--redis-host', '--redis-port', '--redis-db' are the "
                        "Go tool's, ignored here (state is local: the SQLite file " +
                        host_.state() + ")"));
  CliResult after = host_.Run({"reserve", "--redis-host=localhost", "--short"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "0");
  EXPECT_THAT(after.err, HasSubstr("'--redis-host' is the Go tool's"));
  // Quiet when not used.
  EXPECT_EQ(host_.Run({"status"}).err, "");
}

// A ~/.canhazgpu.yaml written for the Go tool works: its own settings are
// read, Redis and the keys that mean nothing here are one notice, and a typo
// of one of our keys is still an error with its suggestion.
TEST_F(CliGoCompatTest, GoToolConfigFileWorksWithOneNotice) {
  const std::string home = host_.dir() + "/.canhazgpu.yaml";
  WriteFile(home,
            "redis:\n  host: localhost\n  port: 6379\n  db: 0\nmemory:\n  threshold: 2048\n"
            "remote_hosts: []\nstatus:\n  no-color: true\nreserve:\n  duration: 2h\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status"}, {"config", "show"}, {"queue"}}) {
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(LineCount(r.err), 1u) << r.err;
    EXPECT_THAT(r.err, HasSubstr("canhazgpu: note: " + home + ": "));
    EXPECT_THAT(r.err, HasSubstr("'redis.host'"));
    EXPECT_THAT(r.err, HasSubstr("'status.no-color'"));
    EXPECT_THAT(r.err, HasSubstr("are the Go tool's, ignored here (state is local"));
  }
  EXPECT_EQ(Show()["options"]["memory-threshold"]["value"], "2048");
  EXPECT_THAT(host_.Run({"reserve"}).out, HasSubstr("for 2h"));

  WriteFile(home, "redis:\n  host: localhost\nreserve:\n  duratoin: 1h\n");
  CliResult typo = host_.Run({"status"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err,
              HasSubstr(":4: unknown key 'reserve.duratoin' (did you mean 'reserve.duration'?)"));
  WriteFile(home, "redis:\n  hots: localhost\n");
  CliResult redis_typo = host_.Run({"status"});
  EXPECT_EQ(redis_typo.exit_code, 2);
  EXPECT_THAT(redis_typo.err, HasSubstr("unknown key 'redis.hots' (did you mean 'redis-host'?)"));
}

// Viper's places when no --config is given: `.canhazgpu` with its
// extensions in $HOME, then in the current directory; ours after them.
TEST_F(CliGoCompatTest, ConfigFileLookupFollowsTheGoToolsOrder) {
  auto config_file = [&] {
    CliResult r = RunInWork({"config", "show", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["config_file"] : json();
  };
  EXPECT_EQ(config_file(), nullptr);
  WriteFile(work_ + "/.canhazgpu.yml", "reserve:\n  gpus: 3\n");
  chmod((work_ + "/.canhazgpu.yml").c_str(), 0644);
  EXPECT_EQ(config_file(), "./.canhazgpu.yml");
  EXPECT_THAT(RunInWork({"reserve"}).out, HasSubstr("Reserved 3 GPU(s)"));
  host_.Run({"release"});

  // $HOME before the current directory; within one, viper's order (json
  // first); an extensionless .canhazgpu is YAML, after the extensions.
  WriteFile(host_.dir() + "/.canhazgpu", "reserve:\n  gpus: 2\n");
  EXPECT_EQ(config_file(), host_.dir() + "/.canhazgpu");
  EXPECT_THAT(RunInWork({"reserve"}).out, HasSubstr("Reserved 2 GPU(s)"));
  host_.Run({"release"});
  WriteFile(host_.dir() + "/.canhazgpu.yaml", "reserve:\n  gpus: 1\n");
  EXPECT_EQ(config_file(), host_.dir() + "/.canhazgpu.yaml");
  WriteFile(host_.dir() + "/.canhazgpu.json", R"({"reserve": {"gpus": 4}})");
  EXPECT_EQ(config_file(), host_.dir() + "/.canhazgpu.json");

  // A file in the current directory that others may write is not read.
  for (const char* name : {"/.canhazgpu.json", "/.canhazgpu.yaml", "/.canhazgpu"}) {
    std::remove((host_.dir() + name).c_str());
  }
  chmod((work_ + "/.canhazgpu.yml").c_str(), 0666);
  CliResult shared = RunInWork({"config", "show", "--json"});
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_EQ(json::parse(shared.out)["config_file"], nullptr);
  EXPECT_THAT(shared.err, HasSubstr("./.canhazgpu.yml is not read"));
}

TEST_F(CliGoCompatTest, ShortFlagsOfTheGoTool) {
  CliResult reserve = host_.Run({"reserve", "-w", "5s", "-g", "4", "--short"});
  EXPECT_EQ(reserve.exit_code, 0) << reserve.err;
  // -w bounds the wait: all four GPUs are held, so it gives up (exit 3).
  CliResult run = host_.Run({"run", "-w", "1s", "--", "true"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  host_.Run({"release"});
  EXPECT_EQ(host_.Run({"run", "-w", "1m", "--", "true"}).exit_code, 0);
  CliResult report = host_.Run({"report", "-d", "7", "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(json::parse(report.out)["days"], 7);
}

// -u NAME: a display name for a shared account, shown beside the real
// user; the reservation stays the real user's.
TEST_F(CliGoCompatTest, UserFlagIsADisplayNameOnly) {
  CliResult reserve = host_.Run({"reserve", "-u", "alice", "-G", "1", "--short"});
  ASSERT_EQ(reserve.exit_code, 0) << reserve.err;
  json status = json::parse(host_.Run({"status", "--json"}).out);
  const std::string me = status[1]["user"];
  EXPECT_NE(me, "alice");
  EXPECT_EQ(status[1]["display_user"], "alice");
  EXPECT_FALSE(status[0].contains("display_user"));
  EXPECT_THAT(host_.Run({"status"}).out, HasSubstr("│ " + me + " (alice) │"));

  CliResult run = host_.Run({"run", "--user", "bob", "-G", "2", "--", "sh", "-c",
                             std::string(CANHAZGPU_BINARY) + " status --json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out)[2]["display_user"], "bob");

  // Ownership is the uid's: a plain release ends it.
  CliResult release = host_.Run({"release"});
  EXPECT_EQ(release.exit_code, 0) << release.err;
  EXPECT_EQ(json::parse(host_.Run({"status", "--json"}).out)[1]["status"], "AVAILABLE");

  for (const std::string& bad : {std::string(""), std::string("a\nb"), std::string(65, 'x')}) {
    CliResult r = host_.Run({"reserve", "--user", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--user")) << bad;
  }
}

// queue --json carries the Go tool's names and shapes beside ours.
TEST_F(CliGoCompatTest, QueueJsonHasTheGoToolsFields) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "3"}).exit_code, 0);
  int waiter = host_.Spawn({"reserve", "-g", "2", "-u", "ci-bot", "-d", "1h"});
  json queue;
  ASSERT_TRUE(Eventually([&] {
    queue = json::parse(host_.Run({"queue", "--json"}).out);
    return queue["entries"].size() == 1 && queue["entries"][0]["allocated_gpus"].size() == 1;
  })) << queue.dump();
  const json& e = queue["entries"][0];
  EXPECT_EQ(e["requested_count"], 2);
  EXPECT_EQ(e["allocated_gpus"], json::array({3}));
  EXPECT_EQ(e["reservation_type"], "manual");
  EXPECT_EQ(e["expiry_duration"], int64_t{3600} * 1'000'000'000);
  EXPECT_EQ(e["display_user"], "ci-bot");
  EXPECT_EQ(e["actual_user"], e["user"]);
  EXPECT_TRUE(e["enqueue_time"].is_string());
  // The text table names both, as status does.
  EXPECT_THAT(host_.Run({"queue"}).out,
              HasSubstr("│ " + e["user"].get<std::string>() + " (ci-bot) │"));
  EXPECT_EQ(queue["total_waiting"], 1);
  EXPECT_EQ(queue["total_gpus_requested"], 2);
  EXPECT_EQ(queue["total_gpus_allocated"], 1);
  kill(waiter, SIGTERM);
  ExitCodeOf(waiter);
}

// report --json carries the Go tool's names and shapes beside ours.
TEST_F(CliGoCompatTest, ReportJsonHasTheGoToolsFields) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "2"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"run", "--", "true"}).exit_code, 0);
  json r = json::parse(host_.Run({"report", "--json"}).out);
  ASSERT_EQ(r["users"].size(), 1u) << r.dump();
  const json& u = r["users"][0];
  EXPECT_EQ(u["name"], u["user"]);
  EXPECT_EQ(u["percentage"], 100.0);
  EXPECT_EQ(u["run_count"], 1);
  EXPECT_EQ(u["manual_count"], 1);
  EXPECT_TRUE(u["gpu_hours"].is_number());
  EXPECT_TRUE(r["total_gpu_hours"].is_number());
  EXPECT_EQ(r["total_reservations"], 2);
  EXPECT_EQ(r["unique_users"], 1);
  EXPECT_EQ(r["days"], 30);
  EXPECT_EQ(r["start_date"].get<std::string>().size(), 10u);  // YYYY-MM-DD
  EXPECT_EQ(r["end_date"].get<std::string>(), r["end"].get<std::string>().substr(0, 10));
}

// The README's own example: --all on a host without remote hosts is this
// host; --all with --remote is a conflict.
TEST_F(CliGoCompatTest, StatusAllWithoutRemoteHostsShowsThisHost) {
  CliResult j = host_.Run({"status", "--all", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json out = json::parse(j.out);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out["localhost"].size(), 4u);
  CliResult table = host_.Run({"status", "--all"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("localhost\nGPU │ STATUS"));

  CliResult both = host_.Run({"status", "--all", "--remote", "gpu1"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--all and --remote contradict each other"));
  EXPECT_EQ(LineCount(both.err), 1u);
  EXPECT_THAT(both.out, Not(HasSubstr("GPU")));
}

}  // namespace
}  // namespace canhazgpu::testing
