// status beyond one table: remote hosts over (a stand-in for) ssh, --all,
// --summary and --watch, through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cctype>
#include <sstream>

#include "integration/cli_runner.h"
#include "integration/terminal_session.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class CliStatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
    root_ = host_.dir() + "/remotes";
    mkdir(root_.c_str(), 0755);
    AddRemote("gpu1", 4);
    AddRemote("gpu2", 8);
    host_.env()["FAKE_SSH_ROOT"] = root_;
    host_.env()["CANHAZGPU_TEST_BINARY"] = CANHAZGPU_BINARY;
    host_.env()["CANHAZGPU_STATUS_SSH"] = FAKE_SSH;
  }
  // A remote host: its own state file and simulated GPUs.
  void AddRemote(const std::string& name, int gpus) {
    std::string dir = root_ + "/" + name;
    mkdir(dir.c_str(), 0755);
    CliResult r = RunProgram({CANHAZGPU_BINARY, "admin", "--provider", "fake", "--gpus",
                              std::to_string(gpus), "--state", dir + "/state.db"},
                             {{"HOME", dir}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CliResult RunOn(const std::string& name, std::vector<std::string> args) {
    std::string dir = root_ + "/" + name;
    args.insert(args.begin(), CANHAZGPU_BINARY);
    args.insert(args.end(), {"--state", dir + "/state.db"});
    return RunProgram(args, {{"HOME", dir}});
  }
  void SetRemoteHosts(const std::string& list) {
    WriteFile(host_.dir() + "/.canhazgpu.yaml", "remote_hosts: [" + list + "]\n");
  }

  CliHost host_;
  std::string root_;
};

// The Go tool's (and kubectl's) convention: global flags before the command.
TEST_F(CliStatusTest, GlobalFlagsMayComeBeforeTheCommand) {
  const std::string state = root_ + "/gpu1/state.db";
  CliResult r = RunProgram({CANHAZGPU_BINARY, "--state", state, "--no-color", "--memory-threshold",
                            "512", "status", "--json"},
                           {{"HOME", root_ + "/gpu1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 4u);  // gpu1's four GPUs, not this host's two
  r = RunProgram({CANHAZGPU_BINARY, "--gpus", "1", "status"}, {{"HOME", root_}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag '--gpus' before the command"));
}

TEST_F(CliStatusTest, RemoteHostJsonIsKeyedByHost) {
  ASSERT_EQ(RunOn("gpu1", {"reserve", "-g", "2", "--note", "remote job"}).exit_code, 0);
  CliResult r = host_.Run({"status", "--remote", "gpu1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  ASSERT_TRUE(out.contains("gpu1"));
  EXPECT_FALSE(out.contains("localhost"));
  ASSERT_EQ(out["gpu1"].size(), 4u);
  EXPECT_EQ(out["gpu1"][0]["status"], "IN_USE");
  EXPECT_EQ(out["gpu1"][0]["note"], "remote job");
  // The argv ssh got: options, `--`, the host, the remote command.
  EXPECT_THAT(ReadFile(root_ + "/argv.log"),
              HasSubstr("[-o][BatchMode=yes][-o][ConnectTimeout=10][--][gpu1][canhazgpu][status]"
                        "[--json]"));
}

TEST_F(CliStatusTest, AllShowsEveryHostAndAnUnreachableOneDoesNotHideTheOthers) {
  SetRemoteHosts("gpu1, down, gpu2, slow, garbage");
  CliResult r = host_.Run({"status", "--all", "--json", "--remote-timeout", "2s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["localhost"].size(), 2u);
  EXPECT_EQ(out["gpu1"].size(), 4u);
  EXPECT_EQ(out["gpu2"].size(), 8u);
  EXPECT_THAT(out["down"]["error"].get<std::string>(), HasSubstr("Connection refused"));
  EXPECT_THAT(out["slow"]["error"].get<std::string>(), HasSubstr("no answer within 2s"));
  EXPECT_THAT(out["garbage"]["error"].get<std::string>(), HasSubstr("unexpected output"));

  CliResult table = host_.Run({"status", "--all", "--remote-timeout", "2s"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("localhost\nGPU │ STATUS"));
  EXPECT_THAT(table.out, HasSubstr("gpu2\nGPU │ STATUS"));
  EXPECT_THAT(table.out, HasSubstr("down\nunreachable: ssh: connect to host down"));
}

TEST_F(CliStatusTest, SummaryHasOneLinePerHost) {
  SetRemoteHosts("gpu1, down");
  ASSERT_EQ(host_.Run({"reserve", "-g", "2"}).exit_code, 0);
  ASSERT_EQ(RunOn("gpu1", {"reserve", "-g", "1"}).exit_code, 0);
  // A waiter on this host, counted as waiting.
  int waiter = host_.Spawn({"reserve", "-g", "1"});
  ASSERT_TRUE(Eventually([&] {
    return host_.Run({"queue", "--json"}).out.find("\"id\"") != std::string::npos;
  }));
  CliResult r = host_.Run({"status", "--all", "--summary", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["localhost"]["gpus"], 2);
  EXPECT_EQ(out["localhost"]["in_use"], 2);
  EXPECT_EQ(out["localhost"]["available"], 0);
  EXPECT_EQ(out["localhost"]["waiting"], 1);
  EXPECT_EQ(out["localhost"]["products"], "2× NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out["gpu1"]["available"], 3);
  EXPECT_EQ(out["gpu1"]["in_use"], 1);
  EXPECT_THAT(out["down"]["error"].get<std::string>(), HasSubstr("Connection refused"));

  CliResult table = host_.Run({"status", "--all", "--summary"});
  EXPECT_THAT(table.out, HasSubstr("HOST"));
  EXPECT_THAT(table.out, HasSubstr("WAITING"));
  EXPECT_THAT(table.out, HasSubstr("unreachable: ssh: connect"));
  kill(waiter, SIGTERM);
  ExitCodeOf(waiter);
}

// A GPU held by shares is counted once, as shared, with the memory its
// shares leave; the summary of a host without shares is as it was.
TEST_F(CliStatusTest, SummaryCountsASharedGpuOnceAsSharedWithItsMemoryLeft) {
  CliResult before = host_.Run({"status", "--summary"});
  EXPECT_THAT(before.out, Not(HasSubstr("SHARED")));
  ASSERT_EQ(host_.Run({"reserve", "--gpu-mem", "10Gi"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"reserve", "--gpu-mem", "20Gi"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"reserve", "-g", "1"}).exit_code, 0);
  CliResult r = host_.Run({"status", "--summary", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json local = json::parse(r.out)["localhost"];
  EXPECT_EQ(local["gpus"], 2);
  EXPECT_EQ(local["available"], 0);
  EXPECT_EQ(local["in_use"], 1) << "the GPU held whole only";
  EXPECT_EQ(local["shared"], 1);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  EXPECT_EQ(local["shared_memory_left_bytes"], (81559 - 512 - 30 * 1024) * kMiB);
  EXPECT_EQ(local["shared_memory_left_most_bytes"], (81559 - 512 - 30 * 1024) * kMiB);
  CliResult table = host_.Run({"status", "--summary"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("IN USE │ SHARED"));
  EXPECT_THAT(table.out, HasSubstr("│ 1 (49.1Gi left) │"));
}

TEST_F(CliStatusTest, HostNamesNeverBecomeOptionsOrShellText) {
  CliResult option = host_.Run({"status", "--remote", "-oProxyCommand=touch /tmp/x"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_THAT(option.err, HasSubstr("invalid remote host '-oProxyCommand=touch /tmp/x'"));
  const std::string marker = host_.dir() + "/pwned";
  CliResult shell = host_.Run({"status", "--remote", "x;touch$IFS" + marker, "--json"});
  EXPECT_EQ(shell.exit_code, 0) << shell.err;
  EXPECT_THAT(json::parse(shell.out).begin().value()["error"].get<std::string>(),
              HasSubstr("Could not resolve hostname"));
  struct stat st;
  EXPECT_NE(stat(marker.c_str(), &st), 0);
}

TEST_F(CliStatusTest, WatchRedrawsUntilStopped) {
  const std::string out_path = host_.dir() + "/watch.out";
  // stdout to a file: each frame is appended, separated by a blank line.
  int pid = SpawnProgram(
      {"/bin/sh", "-c", std::string(CANHAZGPU_BINARY) + " status --watch 1s > " + out_path},
      host_.env());
  ASSERT_TRUE(
      Eventually([&] { return ReadFile(out_path).find("● AVAILABLE") != std::string::npos; }));
  ASSERT_EQ(host_.Run({"reserve", "-g", "1", "--note", "watched"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return ReadFile(out_path).find("watched") != std::string::npos; }));
  EXPECT_THAT(ReadFile(out_path), HasSubstr("every 1s: canhazgpu status"));
  kill(-pid, SIGINT);
  EXPECT_EQ(ExitCodeOf(pid), 130);
  EXPECT_EQ(host_.Run({"status", "--watch", "soon"}).exit_code, 2);
  EXPECT_EQ(host_.Run({"status", "extra"}).exit_code, 2);
}

// Into a pipe, --watch --json is JSON Lines: one document per line, no
// header, no blank lines, no terminal codes.
TEST_F(CliStatusTest, WatchJsonWritesOneDocumentPerLine) {
  const std::string out_path = host_.dir() + "/watch.jsonl";
  int pid = SpawnProgram(
      {"/bin/sh", "-c", std::string(CANHAZGPU_BINARY) + " status --watch 1s --json > " + out_path},
      host_.env());
  ASSERT_TRUE(Eventually([&] { return ReadFile(out_path).find('\n') != std::string::npos; }));
  ASSERT_EQ(host_.Run({"reserve", "-g", "1", "--note", "watched"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return ReadFile(out_path).find("watched") != std::string::npos; }));
  kill(-pid, SIGINT);
  EXPECT_EQ(ExitCodeOf(pid), 130);
  const std::string text = ReadFile(out_path);
  size_t documents = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(doc.is_discarded()) << "not one JSON document: " << line;
    ASSERT_TRUE(doc.is_array()) << line;
    EXPECT_EQ(doc.size(), 2u);
    ++documents;
  }
  EXPECT_GE(documents, 2u) << text;
  EXPECT_EQ(text.find("\n\n"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace canhazgpu::testing

namespace canhazgpu::testing {
namespace {

class CliReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
  }
  CliHost host_;
};

TEST_F(CliReportTest, ReportsReservationsPerUserWithSamplesAndGaps) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "2", "--note", "<b>x</b>"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"status"}).exit_code, 0);
  // Long enough to be more than 0 ms of GPU time on any clock.
  ASSERT_EQ(host_.Run({"run", "--", "sleep", "0.01"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  CliResult r = host_.Run({"report", "--json", "--days", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["days"], 7);
  EXPECT_EQ(report["gpus"], 4);
  ASSERT_EQ(report["users"].size(), 1u);
  const json& me = report["users"][0];
  EXPECT_EQ(me["reservations"], 2) << "the 2-GPU reservation counts once, plus the run";
  EXPECT_GT(me["manual_gpu_hours"].get<double>(), 0.0);
  EXPECT_GT(me["run_gpu_hours"].get<double>(), 0.0);
  double split = me["busy_gpu_hours"].get<double>() + me["idle_gpu_hours"].get<double>() +
                 me["unknown_gpu_hours"].get<double>();
  EXPECT_NEAR(split, me["gpu_hours"].get<double>(), 1e-9);
  // The simulated GPUs use no memory: sampled time is idle, not busy.
  EXPECT_EQ(me["busy_gpu_hours"].get<double>(), 0.0);
  EXPECT_GT(me["idle_gpu_hours"].get<double>(), 0.0);
  EXPECT_EQ(report["available_gpu_hours"], 4 * 7 * 24);

  CliResult csv = host_.Run({"report", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, ::testing::StartsWith("user,gpu_hours,run_gpu_hours,"));
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);  // header, user, TOTAL
  CliResult text = host_.Run({"report"});
  EXPECT_THAT(text.out, HasSubstr("(30 days), 4 GPUs"));
  EXPECT_THAT(text.out, HasSubstr("TOTAL"));
  EXPECT_THAT(text.out, HasSubstr("unknown (no usage samples)"));
}

// A share counts as its part of the GPU (ADR 0018): an hour of 10Gi of a
// GPU with 80Gi to share is 0.125 GPU-hours, beside an hour of a whole GPU;
// the report says which part came from shares. A share released through the
// real binary records its GPU's shareable memory in the history for it.
TEST_F(CliReportTest, AShareCountsItsPartOfTheGpuInJsonTextAndCsv) {
  ASSERT_EQ(host_.Run({"reserve", "--gpu-mem", "40Gi"}).exit_code, 0);
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(host_.state().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT memory, shareable FROM history", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  constexpr int64_t kMiB = int64_t{1} << 20;
  EXPECT_EQ(sqlite3_column_int64(stmt, 0), 40 * 1024 * kMiB);
  EXPECT_EQ(sqlite3_column_int64(stmt, 1), (81559 - 512) * kMiB) << "the GPU's shareable memory";
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM history", nullptr, nullptr, nullptr), SQLITE_OK);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const std::string me = getpwuid(geteuid())->pw_name;
  // Two reservations of an hour each, a second apart (one start would be
  // one reservation of two GPUs).
  auto hour = [&](int64_t ago_ms) {
    return std::to_string(now_ms - ago_ms - 3'600'000) + ", " + std::to_string(now_ms - ago_ms) +
           ", 'released', ";
  };
  const std::string uid_user = std::to_string(geteuid()) + ", '" + me + "', 'manual', ";
  const std::string insert =
      "INSERT INTO history (gpu, uid, user, kind, start_ms, end_ms, reason, memory, shareable) "
      "VALUES (0, " +
      uid_user + hour(3'600'000) + std::to_string(10 * 1024 * kMiB) + ", " +
      std::to_string(80 * 1024 * kMiB) + "), (1, " + uid_user + hour(3'601'000) + "0, 0)";
  ASSERT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  CliResult r = host_.Run({"report", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report["users"].size(), 1u);
  const json& u = report["users"][0];
  EXPECT_NEAR(u["gpu_hours"].get<double>(), 1.125, 1e-6);
  EXPECT_NEAR(u["manual_gpu_hours"].get<double>(), 1.125, 1e-6);
  EXPECT_NEAR(u["shared_gpu_hours"].get<double>(), 0.125, 1e-6);
  EXPECT_NEAR(report["total"]["shared_gpu_hours"].get<double>(), 0.125, 1e-6);
  EXPECT_EQ(u["reservations"], 2);

  CliResult text = host_.Run({"report"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("FROM SHARES"));
  EXPECT_THAT(text.out, HasSubstr("Of the reserved GPU-hours, 0.1 came from shares"));
  CliResult csv = host_.Run({"report", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, HasSubstr(",longest_seconds,shared_gpu_hours\n"));
  EXPECT_THAT(csv.out, HasSubstr(",3600,0.125\n"));
}

TEST_F(CliReportTest, EmptyPeriodAndBadFlags) {
  CliResult r = host_.Run({"report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("No reservations in this period."));
  EXPECT_EQ(json::parse(host_.Run({"report", "--json"}).out)["users"].size(), 0u);
  EXPECT_EQ(host_.Run({"report", "--days", "0"}).exit_code, 2);
  EXPECT_EQ(host_.Run({"report", "--json", "--csv"}).exit_code, 2);
  EXPECT_EQ(host_.Run({"report", "extra"}).exit_code, 2);
}

}  // namespace
}  // namespace canhazgpu::testing

namespace canhazgpu::testing {
namespace {

TEST(CliStatusTerminalTest, WatchRedrawsInPlaceAndFitsANarrowTerminal) {
  CliHost host;
  ASSERT_EQ(host.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  ASSERT_EQ(host.Run({"reserve", "-g", "1", "--note", "narrow"}).exit_code, 0);
  TerminalSession wide(host, {"status"}, 200);
  ASSERT_TRUE(wide.WaitFor("VALIDATION"));
  // 80 columns: the least useful columns go, no line is wider.
  TerminalSession narrow(host, {"status", "--watch", "1s"}, 80);
  ASSERT_TRUE(narrow.WaitFor("\033[J"));  // one frame drawn
  // The Go tool's first columns stay; only ours and the least needed go.
  for (const char* header : {"USER", "DURATION", "TYPE", "DETAILS", "NOTE"}) {
    EXPECT_THAT(narrow.screen(), HasSubstr(header));
  }
  ASSERT_EQ(host.Run({"release"}).exit_code, 0);
  // The next frame starts at the top of the screen again (cursor home),
  // not below the last, and shows the release.
  ASSERT_TRUE(narrow.WaitUntil([](const std::string& screen) {
    size_t second = screen.find("\033[H", 1);
    return second != std::string::npos && screen.find("\033[J", second) != std::string::npos;
  }));
  const std::string& screen = narrow.screen();
  EXPECT_EQ(screen.find("\033[H"), 0u);
  const std::string second_frame = screen.substr(screen.find("\033[H", 1));
  EXPECT_THAT(second_frame, Not(HasSubstr("IN_USE")));
  EXPECT_THAT(screen.substr(0, screen.find("\033[H", 1)), HasSubstr("IN_USE"));
  // While the GPU was held (a note, longer details), VALIDATION made room.
  EXPECT_THAT(screen.substr(0, screen.find("\033[H", 1)), Not(HasSubstr("VALIDATION")));
  EXPECT_THAT(screen, HasSubstr("GPU │ STATUS"));
  std::istringstream lines(screen);
  for (std::string line; std::getline(lines, line);) {
    std::string plain;  // without escape sequences
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\033') {
        while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
        continue;
      }
      if (line[i] != '\r') plain += line[i];
    }
    size_t width = 0;  // UTF-8 code points
    for (unsigned char c : plain) width += (c & 0xC0) != 0x80;
    EXPECT_LE(width, 80u) << plain;
  }
  kill(narrow.pid(), SIGINT);
  EXPECT_EQ(narrow.Wait(), 130);
}

}  // namespace
}  // namespace canhazgpu::testing
