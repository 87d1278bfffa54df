// The canhazgpu commands end to end: the real binary, a real SQLite file in
// a temp dir, and a simulated host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class CliCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CliResult admin = host_.Run({"admin", "--provider", "fake", "--gpus", "4"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }

  json Status() {
    CliResult r = host_.Run({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }

  CliHost host_;
};

TEST_F(CliCommandsTest, AdminCreatesSimulatedHostAndRefusesSecondInit) {
  EXPECT_TRUE(json::parse(ReadFile(host_.fake_host()))["gpus"].size() == 4);
  CliResult again = host_.Run({"admin", "--provider", "fake", "--gpus", "4"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already initialized with 4 GPUs"));
  ASSERT_EQ(host_.Run({"reserve", "-g", "2"}).exit_code, 0);
  CliResult forced = host_.Run({"admin", "--provider", "fake", "--gpus", "2", "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_THAT(forced.out, HasSubstr("Released 2 reservation(s)"));
  EXPECT_THAT(forced.err, HasSubstr("warning: --gpus 2 but the fake provider reports 4 GPUs"));
  EXPECT_EQ(Status().size(), 2u);
}

TEST_F(CliCommandsTest, StatusShowsAllGpusAvailable) {
  json status = Status();
  ASSERT_EQ(status.size(), 4u);
  for (const json& g : status) {
    EXPECT_EQ(g["status"], "AVAILABLE");
    EXPECT_EQ(g["details"], "never used");
    EXPECT_EQ(g["gpu_model"], "NVIDIA H100 80GB HBM3");
  }
  CliResult table = host_.Run({"status"});
  EXPECT_THAT(table.out, StartsWith("GPU │ STATUS"));
  EXPECT_EQ(table.out.find("\033["), std::string::npos) << "no colour when piped";
}

TEST_F(CliCommandsTest, ReserveShortPrintsOnlyIds) {
  CliResult r = host_.Run({"reserve", "--gpus", "2", "--short"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0,1");
  json status = Status();
  EXPECT_EQ(status[0]["status"], "IN_USE");
  EXPECT_EQ(status[0]["type"], "MANUAL");
  EXPECT_EQ(status[0]["details"].get<std::string>().substr(0, 11), "expires in ");
  EXPECT_EQ(status[2]["status"], "AVAILABLE");
}

TEST_F(CliCommandsTest, ReserveSpecificIdsWithNoteAndDuration) {
  CliResult r = host_.Run({"reserve", "-G", "3,1", "-d", "1h30m", "--note", "<b>x</b>"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Reserved 2 GPU(s): 1,3 for 1h 30m 0s"));
  EXPECT_THAT(r.out, HasSubstr("export CUDA_VISIBLE_DEVICES=1,3"));
  json status = Status();
  EXPECT_EQ(status[1]["note"], "<b>x</b>");
  EXPECT_TRUE(status[3].contains("expires_at"));
  CliResult taken = host_.Run({"reserve", "-G", "3", "--nonblock"});
  EXPECT_EQ(taken.exit_code, 3);
  EXPECT_THAT(taken.err, HasSubstr("gpu 3 is reserved by"));
}

TEST_F(CliCommandsTest, NotEnoughGpusExitsThreeAndSaysWhy) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "3"}).exit_code, 0);
  CliResult r = host_.Run({"reserve", "-g", "2", "--nonblock"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "canhazgpu: not enough GPUs available: requested 2, 1 free of 4 (3 reserved)\n");
}

TEST_F(CliCommandsTest, ReleaseTakesManualReservationsOnly) {
  ASSERT_EQ(host_.Run({"reserve", "-G", "0"}).exit_code, 0);
  CliResult r = host_.Run({"release"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "Released 1 GPU(s): 0\n");
  EXPECT_EQ(host_.Run({"release"}).out, "No manual reservations of yours to release\n");
  CliResult not_reserved = host_.Run({"release", "-G", "2"});
  EXPECT_EQ(not_reserved.exit_code, 1);
  EXPECT_EQ(not_reserved.err, "canhazgpu: gpu 2 is not reserved\n");
  EXPECT_EQ(Status()[0]["details"].get<std::string>().substr(0, 9), "free for ");
}

// A GPU k8shazgpu-node prepared for a claim (written here as the driver's
// store call writes it, for this very user): status shows it as K8S with
// its claim, and neither release nor reserve --force takes it.
TEST_F(CliCommandsTest, KubernetesClaimGpuIsShownAndNotTakenLocally) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const std::string me = getpwuid(geteuid())->pw_name;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(host_.state().c_str(), &db), SQLITE_OK);
  const std::string insert =
      "INSERT INTO reservations (gpu, uid, user, kind, start_ms, claim_namespace, claim_name, "
      "claim_uid, claim_pod) VALUES (1, " +
      std::to_string(geteuid()) + ", '" + me + "', 'k8s', " + std::to_string(now_ms - 3'600'000) +
      ", 'ml', 'train', 'uid-1', 'train-0')";
  ASSERT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  json status = Status();
  EXPECT_EQ(status[1]["status"], "IN_USE");
  EXPECT_EQ(status[1]["type"], "K8S");
  EXPECT_EQ(status[1]["user"], me);
  EXPECT_EQ(status[1]["details"], "Kubernetes claim ml/train (pod train-0)");
  EXPECT_EQ(status[1]["claim"]["uid"], "uid-1");
  EXPECT_THAT(host_.Run({"status"}).out, HasSubstr("K8S"));

  CliResult release = host_.Run({"release", "-G", "1"});
  EXPECT_EQ(release.exit_code, 1);
  EXPECT_EQ(release.err,
            "canhazgpu: gpu 1 belongs to Kubernetes claim ml/train (pod train-0); it is released "
            "by deleting the pod or the claim\n");
  EXPECT_EQ(host_.Run({"release"}).out, "No manual reservations of yours to release\n");
  CliResult forced = host_.Run({"reserve", "-G", "1", "--force", "--nonblock"});
  EXPECT_EQ(forced.exit_code, 3);
  EXPECT_THAT(forced.err, HasSubstr("reserved for Kubernetes claim ml/train"));
  EXPECT_EQ(Status()[1]["type"], "K8S");

  CliResult report = host_.Run({"report", "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const json users = json::parse(report.out)["users"];
  ASSERT_EQ(users.size(), 1u);
  EXPECT_NEAR(users[0]["k8s_gpu_hours"].get<double>(), 1.0, 0.01);
  EXPECT_EQ(users[0]["manual_gpu_hours"].get<double>(), 0.0);
  EXPECT_THAT(host_.Run({"report"}).out, HasSubstr("K8S"));
}

TEST_F(CliCommandsTest, AnotherUsersReservationIsRefusedNamingTheOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  const uint32_t kNobody = 65534;
  CliResult theirs = host_.Run({"reserve", "-G", "2"}, kNobody);
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  EXPECT_EQ(Status()[2]["user"], "nobody") << "identity comes from the uid";
  CliResult mine = host_.Run({"release", "-G", "2"}, 1234);
  EXPECT_EQ(mine.exit_code, 1);
  EXPECT_THAT(mine.err, HasSubstr("gpu 2 is reserved by nobody"));
  EXPECT_EQ(host_.Run({"release", "-G", "2"}).exit_code, 1) << "root needs --force";
  EXPECT_EQ(host_.Run({"release", "-G", "2", "--force"}).exit_code, 0);
  EXPECT_EQ(Status()[2]["status"], "AVAILABLE");
}

TEST_F(CliCommandsTest, RunSetsEnvironmentReturnsStatusAndReleases) {
  CliResult r = host_.Run({"run", "--gpus", "2", "--", "sh", "-c",
                           "echo \"$CUDA_VISIBLE_DEVICES $CUDA_DEVICE_ORDER\"; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "0,1 PCI_BUS_ID\n");
  EXPECT_THAT(r.err, HasSubstr("reserved 2 GPU(s): 0,1 for command execution"));
  for (const json& g : Status()) EXPECT_EQ(g["status"], "AVAILABLE");
}

TEST_F(CliCommandsTest, RunReplacesInheritedCudaVisibleDevices) {
  host_.env()["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  CliResult r = host_.Run({"run", "-G", "2", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.out, "2\n");
}

TEST_F(CliCommandsTest, RunShowsTheJobInStatusWhileItRuns) {
  CliResult r =
      host_.Run({"run", "-g", "1", "--note", "nb", "--", CANHAZGPU_BINARY, "status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json inside = json::parse(r.out);
  EXPECT_EQ(inside[0]["status"], "IN_USE");
  EXPECT_EQ(inside[0]["type"], "RUN");
  EXPECT_EQ(inside[0]["note"], "nb");
  EXPECT_THAT(inside[0]["command"].get<std::string>(), HasSubstr("status --json"));
  EXPECT_GT(inside[0]["pid"].get<int>(), 0);
}

TEST_F(CliCommandsTest, RunReportsSignalDeathAsShellStatus) {
  EXPECT_EQ(host_.Run({"run", "--", "sh", "-c", "kill -TERM $$"}).exit_code, 128 + SIGTERM);
}

TEST_F(CliCommandsTest, CommandThatCannotStartReleasesAtOnce) {
  CliResult missing = host_.Run({"run", "-g", "4", "--", "no-such-command-xyz"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_THAT(missing.err, HasSubstr("command not found"));
  WriteFile(host_.dir() + "/script", "#!/bin/sh\n");
  CliResult not_executable = host_.Run({"run", "-g", "4", "--", host_.dir() + "/script"});
  EXPECT_EQ(not_executable.exit_code, 126);
  for (const json& g : Status()) EXPECT_EQ(g["status"], "AVAILABLE");
}

// Issue 33: a job the timeout stopped exits 124, as timeout(1) and the Go
// tool do, whatever signal ended it (SIGINT here; SIGTERM when it ignores
// SIGINT, and a clean exit on SIGTERM is still a timeout).
TEST_F(CliCommandsTest, RunTimeoutStopsTheCommandAndExits124) {
  CliResult r = host_.Run({"run", "--timeout", "1s", "--grace", "2s", "--", "sleep", "60"});
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_THAT(r.err, HasSubstr("timeout reached"));
  CliResult term = host_.Run({"run", "--timeout", "1s", "--grace", "2s", "--", "sh", "-c",
                              "trap '' INT; trap 'exit 0' TERM; while :; do sleep 0.05; done"});
  EXPECT_EQ(term.exit_code, 124);
  for (const json& g : Status()) EXPECT_EQ(g["status"], "AVAILABLE");
}

// Issue 33: with a timeout that does not fire, the command's own status.
TEST_F(CliCommandsTest, RunWithinItsTimeoutExitsWithTheCommandsStatus) {
  EXPECT_EQ(host_.Run({"run", "--timeout", "1h", "--", "sh", "-c", "exit 7"}).exit_code, 7);
  EXPECT_EQ(host_.Run({"run", "--timeout", "1h", "--", "sh", "-c", "kill -TERM $$"}).exit_code,
            128 + SIGTERM);
}

TEST_F(CliCommandsTest, ExpiredReservationIsFreedByTheNextCommand) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4", "-d", "1s"}).exit_code, 0);
  // Wait until expiry; whichever command runs next must reap it.
  for (int i = 0;
       i < 200 && host_.Run({"reserve", "-g", "4", "--short", "--nonblock"}).exit_code != 0; ++i) {
    usleep(20'000);
  }
  json status = Status();
  EXPECT_EQ(status[0]["status"], "IN_USE");
  EXPECT_TRUE(status[0]["details"].get<std::string>().find("expires in 0h 29m") == 0);
}

TEST_F(CliCommandsTest, UnreservedUsageIsDetectedWithOwnerAndModel) {
  // A shell that stays alive with "vllm serve org/model-x" in its argv.
  int sleeper = SpawnProgram({"sh", "-c", "sleep 300; :", "vllm", "serve", "org/model-x"}, {});
  WriteFile(host_.fake_host(),
            R"({"gpus": [
      {"name": "A", "uuid": "GPU-0", "memory_total_mib": 40960},
      {"name": "A", "uuid": "GPU-1", "memory_total_mib": 40960,
       "processes": [{"pid": )" +
                std::to_string(sleeper) +
                R"(, "used_memory_mib": 4096}]},
      {"name": "A", "uuid": "GPU-2", "memory_total_mib": 40960,
       "processes": [{"pid": )" +
                std::to_string(sleeper) +
                R"(, "used_memory_mib": 512}]},
      {"name": "A", "uuid": "GPU-3", "memory_total_mib": 40960, "error": "fell off"}]})");
  // Wait for the exec so that /proc shows the final command line.
  for (int i = 0;
       i < 200 && ReadFile("/proc/" + std::to_string(sleeper) + "/cmdline").find("model-x") ==
                      std::string::npos;
       ++i) {
    usleep(10'000);
  }
  json status = Status();
  EXPECT_EQ(status[0]["status"], "AVAILABLE");
  EXPECT_EQ(status[1]["status"], "UNRESERVED");
  EXPECT_EQ(status[1]["unreserved_users"][0], getpwuid(getuid())->pw_name);
  EXPECT_EQ(status[1]["processes"][0]["user"], getpwuid(getuid())->pw_name);
  EXPECT_EQ(status[1]["processes"][0]["pid"], sleeper);
  EXPECT_EQ(status[1]["model"]["model"], "org/model-x");
  EXPECT_EQ(status[2]["status"], "AVAILABLE") << "512 MiB is under the 1024 MiB threshold";
  EXPECT_EQ(status[3]["status"], "ERROR");
  EXPECT_EQ(
      json::parse(host_.Run({"status", "--json", "--memory-threshold", "256"}).out)[2]["status"],
      "UNRESERVED");

  CliResult busy = host_.Run({"reserve", "-G", "1", "--nonblock"});
  EXPECT_EQ(busy.exit_code, 3);
  EXPECT_THAT(busy.err, HasSubstr("in use without reservation (4096 MiB by"));
  EXPECT_EQ(host_.Run({"reserve", "-g", "3", "--nonblock"}).exit_code, 3)
      << "busy and broken GPUs are skipped";
  EXPECT_EQ(host_.Run({"reserve", "-G", "1", "--force"}).exit_code, 0);
  EXPECT_EQ(host_.Run({"reserve", "-G", "3", "--force", "--nonblock"}).exit_code, 3)
      << "never an erroring GPU";
  kill(-sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
}

}  // namespace
}  // namespace canhazgpu::testing
