// Every bad input gets exit code 2 (usage) or 1 (runtime), one clear line on
// stderr, and leaves the state exactly as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct BadInput {
  std::vector<std::string> args;
  int exit_code;
  std::string message;
};

// Names each case by its command line in ctest's list (not by its bytes).
void PrintTo(const BadInput& bad, std::ostream* os) {
  for (const std::string& arg : bad.args) *os << arg << ' ';
}

class CliBadInputTest : public ::testing::TestWithParam<BadInput> {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
    ASSERT_EQ(host_.Run({"reserve", "-G", "1", "--note", "keep"}).exit_code, 0);
  }
  // Who holds what, without the clock-dependent fields.
  std::string Holdings() {
    CliResult r = host_.Run({"status", "--json"});
    std::string out;
    for (const json& g : json::parse(r.out)) {
      out += g["status"].get<std::string>() + ":" + g.value("user", "") + ":" +
             g.value("note", "") + ";";
    }
    return out;
  }
  CliHost host_;
};

TEST_P(CliBadInputTest, FailsWithOneLineAndChangesNothing) {
  const BadInput& bad = GetParam();
  std::string before = Holdings();
  CliResult r = host_.Run(bad.args);
  EXPECT_EQ(r.exit_code, bad.exit_code) << r.err;
  EXPECT_THAT(r.err, HasSubstr(bad.message));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(Holdings(), before);
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CliBadInputTest,
    ::testing::Values(
        BadInput{{"reserve", "--gpus", "0"}, 2, "invalid value '0' for --gpus"},
        BadInput{{"reserve", "--gpus", "-2"}, 2, "invalid value '-2' for --gpus"},
        BadInput{{"reserve", "--gpus", "two"}, 2, "expected an integer from 1 to 1024"},
        BadInput{{"reserve", "--gpus", "9"}, 2, "requested 9 GPUs but the pool has only 4"},
        BadInput{{"reserve", "-G", "1,1"}, 2, "duplicate gpu id 1"},
        BadInput{{"reserve", "-G", "7"}, 2, "gpu id 7 is out of range: the pool has GPUs 0-3"},
        BadInput{{"reserve", "-G", "-1"}, 2, "non-negative"},
        BadInput{{"reserve", "-G", "a"}, 2, "invalid gpu id 'a'"},
        BadInput{{"reserve", "-g", "2", "-G", "0,2,3"}, 2, "conflicting --gpus 2 and --gpu-ids"},
        BadInput{{"reserve", "-d", "5x"}, 2, "invalid duration '5x'"},
        BadInput{{"reserve", "-d", "1h30"}, 2, "invalid duration"},
        BadInput{{"reserve", "--gpu", "1"}, 2, "unknown flag --gpu for 'reserve' (did you mean"},
        BadInput{{"reserve", "--gpus"}, 2, "needs a value"},
        BadInput{{"reserve", "-g", "1", "-g", "2"}, 2, "given more than once"},
        BadInput{{"run", "python"}, 2, "missing '--' before the command"},
        BadInput{{"run", "--gpus", "1"}, 2, "no command given"},
        BadInput{{"run", "--gpus", "1", "--"}, 2, "no command given"},
        BadInput{{"run", "--timeout", "soon", "--", "true"}, 2, "invalid duration 'soon'"},
        BadInput{{"release", "-G", "9"}, 2, "out of range"},
        BadInput{{"release", "-G", "x"}, 2, "invalid gpu id"},
        BadInput{{"status", "--memory-threshold", "lots"}, 2, "invalid value 'lots'"},
        BadInput{{"admin", "--provider", "cuda"}, 2, "invalid provider 'cuda'"},
        BadInput{{"admin", "--gpus", "0", "--provider", "fake"}, 2, "invalid value '0'"},
        BadInput{{"admin", "--provider", "fake", "--gpus", "4"}, 1, "already initialized"},
        BadInput{{"stauts"}, 2, "unknown command 'stauts' (did you mean 'status'?)"}));

// Issue 14: every number is range-checked, with the flag and the range named.
INSTANTIATE_TEST_SUITE_P(
    Issue14Ranges, CliBadInputTest,
    ::testing::Values(
        BadInput{{"admin", "--provider", "fake", "--force", "--gpus", "2147483647"},
                 2,
                 "invalid value '2147483647' for --gpus: expected an integer from 1 to 1024"},
        BadInput{{"admin", "--provider", "fake", "--force", "--gpus", "1025"}, 2, "from 1 to 1024"},
        BadInput{
            {"reserve", "--gpus", "1025"}, 2, "for --gpus: expected an integer from 1 to 1024"},
        BadInput{{"reserve", "--gpus", "99999999999999999999"}, 2, "from 1 to 1024"},
        BadInput{{"status", "--memory-threshold", "17592186044416"},
                 2,
                 "for --memory-threshold: expected an integer from 0 to 16777216"},
        BadInput{{"status", "--memory-threshold", "-1"}, 2, "from 0 to 16777216"},
        BadInput{{"report", "--days", "30000"},
                 2,
                 "invalid value '30000' for --days: expected an integer from 1 to 3650"},
        BadInput{{"report", "--days", "1000000"}, 2, "from 1 to 3650"},
        BadInput{{"reserve", "-d", "3651d"}, 2, "longer than 10 years"},
        BadInput{{"run", "--timeout", "99999999h", "--", "true"}, 2, "longer than 10 years"}));

TEST_F(CliBadInputTest, Issue14NumbersFromTheEnvironmentAreRangeChecked) {
  host_.env()["CANHAZGPU_MEMORY_THRESHOLD"] = "17592186044416";
  CliResult r = host_.Run({"status"});
  host_.env().erase("CANHAZGPU_MEMORY_THRESHOLD");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("CANHAZGPU_MEMORY_THRESHOLD: invalid value '17592186044416': "
                               "expected an integer from 0 to 16777216"));
}

TEST_F(CliBadInputTest, Issue14NumbersFromAConfigFileAreRangeChecked) {
  std::string config = host_.dir() + "/c.yaml";
  WriteFile(config, "report:\n  days: 1000000\n");
  host_.env()["CANHAZGPU_CONFIG"] = config;
  CliResult r = host_.Run({"report"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(config + ":2: report.days: invalid value '1000000': expected an "
                                        "integer from 1 to 3650"));
}

TEST_F(CliBadInputTest, Issue14NulInANoteFromAConfigFileIsRejected) {
  std::string before = Holdings();
  std::string config = host_.dir() + "/c.json";
  WriteFile(config, "{\"reserve\": {\"note\": \"be\\u0000fore\"}}");
  host_.env()["CANHAZGPU_CONFIG"] = config;
  CliResult r = host_.Run({"reserve", "-G", "2"});
  host_.env().erase("CANHAZGPU_CONFIG");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(config + ":1: reserve.note: contains a NUL byte"));
  EXPECT_EQ(Holdings(), before);
}

TEST_F(CliBadInputTest, Issue14ConfigFifoIsRejectedAtOnce) {
  std::string fifo = host_.dir() + "/c.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  host_.env()["CANHAZGPU_CONFIG"] = fifo;
  CliResult r = host_.Run({"status"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("config file " + fifo + ": not a regular file"));
}

TEST_F(CliBadInputTest, Issue14ReportPrintsNoNegativeMilliseconds) {
  CliResult r = host_.Run({"report", "--days", "3650", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_LT(report["start"].get<std::string>(), report["end"].get<std::string>());
  EXPECT_EQ(report["start"].get<std::string>().find(".-"), std::string::npos);
}

class CliBrokenFilesTest : public ::testing::Test {
 protected:
  CliHost host_;
};

TEST_F(CliBrokenFilesTest, UninitializedPoolSaysRunAdmin) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"status"}, {"reserve"}, {"release"}, {"run", "--", "true"}}) {
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("run 'canhazgpu admin'"));
  }
}

TEST_F(CliBrokenFilesTest, CorruptedStateFileIsRefusedAndKept) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  std::string junk(4096, 'z');
  WriteFile(host_.state(), junk);
  std::remove((host_.state() + "-wal").c_str());
  std::remove((host_.state() + "-shm").c_str());
  for (auto args : std::vector<std::vector<std::string>>{
           {"status"}, {"reserve"}, {"admin", "--provider", "fake", "--force"}}) {
    CliResult r = host_.Run(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("corrupted or not a canhazgpu database"));
  }
  EXPECT_EQ(ReadFile(host_.state()), junk);
}

TEST_F(CliBrokenFilesTest, NewerSchemaIsRefused) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(host_.state().c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  CliResult r = host_.Run({"reserve"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("schema version 99, newer than this canhazgpu understands"));
}

TEST_F(CliBrokenFilesTest, UnwritableStateDirectoryIsReported) {
  host_.env()["CANHAZGPU_STATE"] = "/proc/canhazgpu/state.db";
  CliResult r = host_.Run(
      {"admin", "--provider", "fake", "--gpus", "2", "--fake-host", host_.dir() + "/h.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot create state"));
}

// Issue 14: a rejected admin created directories and a simulated host file.
TEST_F(CliBrokenFilesTest, RejectedAdminLeavesNothingBehind) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
  const std::string new_host = host_.dir() + "/new-host.json";
  CliResult again =
      host_.Run({"admin", "--provider", "fake", "--gpus", "2", "--fake-host", new_host});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already initialized with 4 GPUs"));
  EXPECT_FALSE(std::filesystem::exists(new_host)) << "no simulated host written";
  // A new pool whose simulated host cannot be written: no state left either.
  host_.env()["CANHAZGPU_STATE"] = host_.dir() + "/other/state.db";
  CliResult broken = host_.Run({"admin", "--provider", "fake", "--gpus", "2", "--fake-host",
                                host_.dir() + "/missing/host.json"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_THAT(broken.err, HasSubstr("fake host: cannot write"));
  EXPECT_FALSE(std::filesystem::exists(host_.dir() + "/other")) << "no state directory";
}

// Issue 14: --provider fake made the state directory 0755, nvidia 1777.
TEST_F(CliBrokenFilesTest, FakeProviderCreatesTheSharedStateDirectory) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  struct stat st;
  ASSERT_EQ(stat((host_.dir() + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(stat(host_.state().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

TEST_F(CliBrokenFilesTest, MalformedSimulatedHostIsAUsageError) {
  std::string path = host_.dir() + "/host.json";
  WriteFile(path, R"({"gpus": [{"name": "x", "uuid": "u", "memory_total_mib": 1, "vram": 2}]})");
  CliResult r = host_.Run({"admin", "--provider", "fake", "--fake-host", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("gpus[0]: unknown field 'vram'"));
  EXPECT_EQ(host_.Run({"status"}).exit_code, 1) << "no pool was created";
}

TEST_F(CliBrokenFilesTest, Issue14PoolOfMoreThan1024GpusIsAUsageError) {
  CliResult r = host_.Run({"admin", "--provider", "fake", "--gpus", "2147483647"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("for --gpus: expected an integer from 1 to 1024"));
  // A simulated host with more GPUs than that is refused too.
  std::string path = host_.dir() + "/host.json";
  std::string gpus;
  for (int i = 0; i < 1025; ++i) {
    gpus += (i ? "," : "") + std::string(R"({"name": "x", "uuid": "u)") + std::to_string(i) +
            R"(", "memory_total_mib": 1})";
  }
  WriteFile(path, R"({"gpus": [)" + gpus + "]}");
  r = host_.Run({"admin", "--provider", "fake", "--fake-host", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("field 'gpus': more than 1024 entries"));
  EXPECT_EQ(host_.Run({"status"}).exit_code, 1) << "no pool was created";
}

TEST_F(CliBrokenFilesTest, Issue14OversizedPoolInAnOldStateFileIsRefusedNotLoopedOver) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(host_.state().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE pool SET gpu_count = 2147483647", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  CliResult r = host_.Run({"status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("pool of 2147483647 GPUs; at most 1024 are supported"));
  EXPECT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2", "--force"}).exit_code, 0);
  EXPECT_EQ(host_.Run({"status"}).exit_code, 0);
}

TEST_F(CliBrokenFilesTest, Issue14PoolOf1024GpusWorks) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "1024"}).exit_code, 0);
  CliResult r = host_.Run({"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 1024u);
}

TEST_F(CliBrokenFilesTest, SimulatedHostBrokenLaterShowsErrorAndHandsNothingOut) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  WriteFile(host_.fake_host(), "{ not json");
  CliResult status = host_.Run({"status", "--json"});
  ASSERT_EQ(status.exit_code, 0);
  json parsed = json::parse(status.out);
  EXPECT_EQ(parsed[0]["status"], "ERROR");
  EXPECT_THAT(parsed[0]["error"].get<std::string>(), HasSubstr("not valid JSON"));
  // Issue 14: a provider that fails as a whole stops the request at once
  // (exit 1, its message), rather than treating every GPU as busy.
  CliResult reserve = host_.Run({"reserve", "--nonblock"});
  EXPECT_EQ(reserve.exit_code, 1);
  EXPECT_THAT(reserve.err, HasSubstr("not valid JSON"));
}

}  // namespace
}  // namespace canhazgpu::testing
