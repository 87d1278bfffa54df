// MpsDaemons against the stand-in nvidia-cuda-mps-control (tests/fake_mps):
// real daemon processes, real signals, the stand-in's record of what it was
// told.
#include "mps/mps_daemons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/gpu.h"
#include "host/linux_process_table.h"

namespace canhazgpu::mps {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kGpuA[] = "GPU-aaaaaaaa-0000-0000-0000-000000000001";
constexpr char kGpuB[] = "GPU-bbbbbbbb-0000-0000-0000-000000000002";
constexpr uint64_t kShareable = 81408 * kMiB;  // 80 GiB less a 512 MiB margin
constexpr uint64_t kTenGiB = 10240 * kMiB;

bool Alive(int64_t pid) {
  host::LinuxProcessTable table;
  std::optional<host::ProcessInfo> info = table.FindBasic(pid);
  return info && info->state != 'Z' && info->state != 'X';
}

// Polls (tests may sleep) until the process is gone; false after a minute.
bool WaitDead(int64_t pid) {
  for (int i = 0; i < 6000; ++i) {
    if (!Alive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class MpsDaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/mpsXXXXXX";  // short: MPS sockets live below it
    ASSERT_NE(mkdtemp(dir), nullptr);
    tmp_ = dir;
    record_ = tmp_ + "/record";
    setenv("FAKE_MPS_RECORD", record_.c_str(), 1);
    unsetenv("FAKE_MPS_FAIL_START");
    options_.driver_root = FAKE_MPS_DRIVER_ROOT;
    options_.state_dir = tmp_ + "/state";
  }
  void TearDown() override {
    // Nothing is left running, whatever the test did.
    MpsDaemons(options_, processes_, RealClock()).Recover({}).IgnoreError();
    std::filesystem::remove_all(tmp_);
    unsetenv("FAKE_MPS_RECORD");
    unsetenv("FAKE_MPS_FAIL_START");
  }

  MpsDaemons Daemons() { return MpsDaemons(options_, processes_, RealClock()); }

  // The stand-in's record lines of daemons on `gpu`, without the prefix of
  // GPU and pid.
  std::vector<std::string> Recorded(const std::string& gpu) const {
    std::ifstream in(record_);
    std::vector<std::string> events;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(gpu + " ", 0) != 0) continue;
      std::string rest = line.substr(gpu.size() + 1);
      events.push_back(rest.substr(rest.find(' ') + 1));
    }
    return events;
  }
  int Starts(const std::string& gpu) const {
    int n = 0;
    for (const std::string& e : Recorded(gpu)) n += e == "start";
    return n;
  }

  std::string tmp_;
  std::string record_;
  MpsOptions options_;
  host::LinuxProcessTable processes_;
};

std::string Value(const std::vector<EnvVar>& env, const std::string& name) {
  for (const EnvVar& var : env) {
    if (var.name == name) return var.value;
  }
  return "<unset>";
}

TEST_F(MpsDaemonsTest, FirstShareStartsTheGpusDaemonWithItsOwnDirectories) {
  MpsDaemons daemons = Daemons();
  absl::StatusOr<std::vector<EnvVar>> env =
      daemons.Acquire({kGpuA, "alice-1", kTenGiB, kShareable});
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_TRUE(daemons.DaemonPid(kGpuA).has_value());
  const std::string pipe = options_.state_dir + "/" + kGpuA + "/pipe";
  const std::string log = options_.state_dir + "/" + kGpuA + "/log";
  EXPECT_EQ(Value(*env, "CUDA_MPS_PIPE_DIRECTORY"), pipe);
  EXPECT_EQ(Value(*env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpuA) + "=10240M");
  EXPECT_EQ(Value(*env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "13");
  std::vector<std::string> events = Recorded(kGpuA);
  EXPECT_THAT(events, Contains("env CUDA_VISIBLE_DEVICES=" + std::string(kGpuA)));
  EXPECT_THAT(events, Contains("env CUDA_MPS_PIPE_DIRECTORY=" + pipe));
  EXPECT_THAT(events, Contains("env CUDA_MPS_LOG_DIRECTORY=" + log));
  // The daemon's default limit is the GPU's shareable memory: a client can
  // only lower it.
  EXPECT_THAT(events, Contains("command set_default_device_pinned_mem_limit 0 81408M"));
  EXPECT_TRUE(std::filesystem::exists(log + "/control.log"));
}

TEST_F(MpsDaemonsTest, TheDaemonGetsTheExtraEnvironment) {
  options_.extra_env = {{"CUDA_FAKE_DRIVER_LIBS", "/run/nvidia/driver/usr/lib"}};
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok());
  EXPECT_THAT(Recorded(kGpuA), Contains("env CUDA_FAKE_DRIVER_LIBS=/run/nvidia/driver/usr/lib"));
}

TEST_F(MpsDaemonsTest, SharesOfOneGpuUseOneDaemonAndGpusGetTheirOwn) {
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok());
  const int64_t pid = *daemons.DaemonPid(kGpuA);
  absl::StatusOr<std::vector<EnvVar>> second =
      daemons.Acquire({kGpuA, "a2", 40960 * kMiB, kShareable});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*daemons.DaemonPid(kGpuA), pid);
  EXPECT_EQ(Starts(kGpuA), 1);
  EXPECT_EQ(Value(*second, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string(kGpuA) + "=40960M");
  EXPECT_EQ(Value(*second, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "51");  // 50.3 up
  ASSERT_TRUE(daemons.Acquire({kGpuB, "b1", kTenGiB, kShareable}).ok());
  EXPECT_NE(*daemons.DaemonPid(kGpuB), pid);
  EXPECT_EQ(Starts(kGpuB), 1);
  EXPECT_EQ(daemons.Shares(kGpuA), (std::vector<std::string>{"a1", "a2"}));
}

// `canhazgpu run` is a child subreaper; the daemon it starts must not
// become its child (the run would wait for it as for a job's process).
TEST_F(MpsDaemonsTest, TheDaemonIsNotAdoptedByASubreaperCaller) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  MpsDaemons daemons = Daemons();
  bool acquired = daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok();
  int flag = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &flag);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  ASSERT_TRUE(acquired);
  EXPECT_EQ(flag, 1);  // given back
  std::optional<host::ProcessInfo> daemon = processes_.Find(*daemons.DaemonPid(kGpuA));
  ASSERT_TRUE(daemon.has_value());
  EXPECT_NE(daemon->ppid, getpid());
}

TEST_F(MpsDaemonsTest, AcquiringAShareAgainIsTheSameShare) {
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok());
  absl::StatusOr<std::vector<EnvVar>> again = daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Starts(kGpuA), 1);
  absl::StatusOr<std::vector<EnvVar>> elsewhere =
      daemons.Acquire({kGpuB, "a1", kTenGiB, kShareable});
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(elsewhere.status().message(),
              HasSubstr(std::string("gpu ") + kGpuB + ": share a1 is already on gpu " + kGpuA));
  EXPECT_FALSE(daemons.DaemonPid(kGpuB).has_value());  // nothing started for it
}

TEST_F(MpsDaemonsTest, LastReleaseQuitsTheDaemonAndRemovesItsDirectories) {
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok());
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a2", kTenGiB, kShareable}).ok());
  const int64_t pid = *daemons.DaemonPid(kGpuA);
  ASSERT_TRUE(daemons.Release("a1").ok());
  EXPECT_TRUE(Alive(pid));
  EXPECT_THAT(Recorded(kGpuA), ::testing::Not(Contains("command quit")));
  ASSERT_TRUE(daemons.Release("a2").ok());
  EXPECT_THAT(Recorded(kGpuA), Contains("command quit"));
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(std::filesystem::exists(options_.state_dir + "/" + kGpuA));
  absl::Status unknown = daemons.Release("a2");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "mps: no share a2");
}

TEST_F(MpsDaemonsTest, ACrashedDaemonIsRestartedByCheckAndByAcquire) {
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok());
  int64_t first = *daemons.DaemonPid(kGpuA);
  ASSERT_EQ(kill(static_cast<pid_t>(first), SIGKILL), 0);
  ASSERT_TRUE(WaitDead(first));
  EXPECT_FALSE(daemons.DaemonPid(kGpuA).has_value());  // a stale pid file is not a daemon
  ASSERT_TRUE(daemons.Check().ok());
  ASSERT_TRUE(daemons.DaemonPid(kGpuA).has_value());
  int64_t second = *daemons.DaemonPid(kGpuA);
  EXPECT_NE(second, first);
  EXPECT_EQ(Starts(kGpuA), 2);
  // The restarted daemon was told its limit again.
  std::vector<std::string> events = Recorded(kGpuA);
  EXPECT_EQ(std::count(events.begin(), events.end(),
                       "command set_default_device_pinned_mem_limit 0 81408M"),
            2);
  ASSERT_EQ(kill(static_cast<pid_t>(second), SIGKILL), 0);
  ASSERT_TRUE(WaitDead(second));
  ASSERT_TRUE(daemons.Acquire({kGpuA, "a2", kTenGiB, kShareable}).ok());
  EXPECT_EQ(Starts(kGpuA), 3);
  EXPECT_EQ(daemons.Shares(kGpuA), (std::vector<std::string>{"a1", "a2"}));
}

// The owner of the daemons is SIGKILLed holding shares on two GPUs; the
// next owner is told that only the share on GPU A still lives.
TEST_F(MpsDaemonsTest, RecoverAdoptsDaemonsWithSharesAndStopsTheRest) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    MpsDaemons daemons(options_, processes_, RealClock());
    bool ok = daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable}).ok() &&
              daemons.Acquire({kGpuB, "b1", kTenGiB, kShareable}).ok();
    char byte = ok ? 1 : 0;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ASSERT_EQ(byte, 1);
  kill(owner, SIGKILL);
  int status = 0;
  waitpid(owner, &status, 0);

  MpsDaemons daemons = Daemons();
  const int64_t a = *daemons.DaemonPid(kGpuA);
  const int64_t b = *daemons.DaemonPid(kGpuB);
  ASSERT_TRUE(daemons.Recover({{kGpuA, "a1", kTenGiB, kShareable}}).ok());
  EXPECT_EQ(daemons.DaemonPid(kGpuA), a);  // adopted, not restarted
  EXPECT_EQ(Starts(kGpuA), 1);
  EXPECT_TRUE(WaitDead(b));
  EXPECT_THAT(Recorded(kGpuB), Contains("command quit"));
  EXPECT_FALSE(std::filesystem::exists(options_.state_dir + "/" + kGpuB));
  ASSERT_TRUE(daemons.Release("a1").ok());
  EXPECT_TRUE(WaitDead(a));
  EXPECT_THAT(std::filesystem::directory_iterator(options_.state_dir),
              ::testing::ResultOf(
                  [](std::filesystem::directory_iterator it) {
                    std::vector<std::string> names;
                    for (const auto& e : it) names.push_back(e.path().filename().string());
                    return names;
                  },
                  ::testing::ElementsAre("lock")));
}

TEST_F(MpsDaemonsTest, RecoverStartsDaemonsForLiveSharesItHasNoRecordOf) {
  MpsDaemons daemons = Daemons();
  ASSERT_TRUE(daemons.Recover({{kGpuB, "b1", kTenGiB, kShareable}}).ok());
  EXPECT_TRUE(daemons.DaemonPid(kGpuB).has_value());
  EXPECT_EQ(daemons.Shares(kGpuB), std::vector<std::string>{"b1"});
  absl::Status twice =
      daemons.Recover({{kGpuA, "x", kTenGiB, kShareable}, {kGpuB, "x", kTenGiB, kShareable}});
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(daemons.Shares(kGpuB), std::vector<std::string>{"b1"});  // unchanged
}

TEST_F(MpsDaemonsTest, ADaemonThatWillNotStartIsOneLineNamingTheGpuAndLeavesNothing) {
  setenv("FAKE_MPS_FAIL_START", "no CUDA-capable device is detected", 1);
  MpsDaemons daemons = Daemons();
  absl::StatusOr<std::vector<EnvVar>> env = daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable});
  EXPECT_EQ(env.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(env.status().message(), HasSubstr(std::string("gpu ") + kGpuA + ": "));
  EXPECT_THAT(env.status().message(),
              HasSubstr("-d failed (exit 1): no CUDA-capable device is detected"));
  EXPECT_EQ(std::string(env.status().message()).find('\n'), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(options_.state_dir + "/" + kGpuA));
}

TEST_F(MpsDaemonsTest, NoControlProgramUnderTheDriverRootIsAnError) {
  options_.driver_root = tmp_ + "/no-driver";
  MpsDaemons daemons = Daemons();
  absl::StatusOr<std::vector<EnvVar>> env = daemons.Acquire({kGpuA, "a1", kTenGiB, kShareable});
  EXPECT_EQ(env.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(env.status().message(),
              HasSubstr(std::string("gpu ") + kGpuA + ": cannot start the mps control daemon: "));
  EXPECT_THAT(env.status().message(), HasSubstr("No such file or directory"));
  EXPECT_THAT(daemons.Shares(kGpuA), IsEmpty());
}

TEST_F(MpsDaemonsTest, BadInputChangesNothing) {
  MpsDaemons daemons = Daemons();
  EXPECT_EQ(daemons.Acquire({"0", "a1", kTenGiB, kShareable}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(daemons.Acquire({kGpuA, "a1", kShareable + kMiB, kShareable}).status().code(),
            absl::StatusCode::kInvalidArgument);
  options_.state_dir = tmp_ + "/" + std::string(80, 'x');
  MpsDaemons deep = Daemons();
  absl::StatusOr<std::vector<EnvVar>> env = deep.Acquire({kGpuA, "a1", kTenGiB, kShareable});
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(env.status().message(), HasSubstr("choose a shorter state directory"));
  EXPECT_TRUE(Recorded(kGpuA).empty());
}

}  // namespace
}  // namespace canhazgpu::mps
