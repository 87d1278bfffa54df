#include "host/gated_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/signals.h"

namespace canhazgpu::host {
namespace {

class GatedChildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gated_child_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Read(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
};

TEST_F(GatedChildTest, AppliesEnvironmentAndReturnsExitStatus) {
  setenv("CUDA_VISIBLE_DEVICES", "7", 1);
  setenv("DROP_ME", "x", 1);
  auto child = GatedChild::Fork(
      {"sh", "-c", "echo \"$CUDA_VISIBLE_DEVICES/${DROP_ME-unset}\" > " + dir_ + "/env; exit 3"});
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_GT(child->pid(), 0);
  ASSERT_TRUE(child->Start({{"CUDA_VISIBLE_DEVICES", "1,3"}, {"DROP_ME", std::nullopt}}).ok());
  auto status = child->Wait({});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 3);
  EXPECT_EQ(Read("env"), "1,3/unset\n");
}

TEST_F(GatedChildTest, CommandDoesNotRunBeforeStart) {
  auto child = GatedChild::Fork({"touch", dir_ + "/ran"});
  ASSERT_TRUE(child.ok());
  child->Abort();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran"));
}

TEST_F(GatedChildTest, ReportsSignalDeathAsShellStatus) {
  auto child = GatedChild::Fork({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  EXPECT_EQ(child->Wait({}).value_or(-1), 128 + SIGKILL);
}

// The wrapper ignores SIGPIPE for itself; the command must not inherit
// that: `kill -PIPE $$` kills a shell only when SIGPIPE is at its default.
TEST_F(GatedChildTest, CommandGetsTheInheritedSigpipeAction) {
  IgnoreBrokenPipes();
  EXPECT_TRUE(IsIgnored(SIGPIPE));
  auto child = GatedChild::Fork({"sh", "-c", "kill -PIPE $$; exit 0"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  EXPECT_EQ(child->Wait({}).value_or(-1), 128 + SIGPIPE);
}

TEST_F(GatedChildTest, MissingCommandIsNotFound) {
  auto child = GatedChild::Fork({"/nonexistent/command-xyz"});
  ASSERT_TRUE(child.ok());
  absl::Status started = child->Start({});
  EXPECT_EQ(started.code(), absl::StatusCode::kNotFound);
}

TEST_F(GatedChildTest, NonExecutableCommandIsPermissionDenied) {
  std::string script = dir_ + "/script.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  auto child = GatedChild::Fork({script});
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(child->Start({}).code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(GatedChildTest, ForwardsSigtermToTheJob) {
  auto child = GatedChild::Fork({"sleep", "60"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  // SIGTERM is blocked in the wrapper while the child lives, so raising it
  // here leaves it pending for Wait() to pick up and forward.
  kill(getpid(), SIGTERM);
  EXPECT_EQ(child->Wait({}).value_or(-1), 128 + SIGTERM);
}

bool timeout_fired = false;

TEST_F(GatedChildTest, TimeoutEscalatesPastAnIgnoredSigint) {
  // The job ignores SIGINT, so only the later SIGTERM ends it.
  auto child = GatedChild::Fork({"sh", "-c", "trap '' INT; while :; do sleep 0.05; done"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  TimeoutPolicy policy{.timeout = std::chrono::milliseconds(50),
                       .grace = std::chrono::milliseconds(200)};
  auto status = child->Wait(policy, {.on_timeout = [] { timeout_fired = true; }});
  EXPECT_TRUE(timeout_fired);
  EXPECT_TRUE(child->timed_out());
  EXPECT_EQ(status.value_or(-1), 128 + SIGTERM);
}

// Issue 33: a job that ends before its timeout was not stopped by it.
TEST_F(GatedChildTest, JobEndingBeforeItsTimeoutDidNotTimeOut) {
  auto child = GatedChild::Fork({"sh", "-c", "exit 5"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  auto status = child->Wait({.timeout = std::chrono::hours(1)});
  EXPECT_EQ(status.value_or(-1), 5);
  EXPECT_FALSE(child->timed_out());
}

// The command exits first; its worker (same group) runs on and is re-parented
// to the wrapper, which waits for it too and then reports the command's own
// exit status.
TEST_F(GatedChildTest, WaitsForWorkersThatOutliveTheCommand) {
  char tmpl[] = "/tmp/gated_child_test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto child = GatedChild::Fork({"sh", "-c", "(read x < " + fifo + ") & exit 3"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  int exited_with = -1;
  auto status = child->Wait({}, {.on_command_exit = [&](int s) {
                              exited_with = s;
                              // Only now let the worker finish.
                              int fd = open(fifo.c_str(), O_WRONLY);
                              ASSERT_GE(fd, 0);
                              ASSERT_EQ(write(fd, "go\n", 3), 3);
                              close(fd);
                            }});
  EXPECT_EQ(exited_with, 3) << "the command exited while its worker still ran";
  EXPECT_EQ(status.value_or(-1), 3);
  siginfo_t info{};
  EXPECT_EQ(waitid(P_ALL, 0, &info, WEXITED | WNOHANG), -1) << "nothing of the job is left";
  std::filesystem::remove_all(dir);
}

TEST_F(GatedChildTest, SignalsToTheWrapperReachTheJobGroup) {
  // sh forwards nothing itself: SIGTERM must reach its `sleep` child too, or
  // the job would outlive the signal for the sleep's whole length.
  auto child = GatedChild::Fork({"sh", "-c", "sleep 30; exit 0"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // blocked: waits in the signalfd
  auto status = child->Wait({});
  EXPECT_EQ(status.value_or(-1), 128 + SIGTERM);
}

// Issue 14: the command starts a daemon that leaves the job's process group
// (setsid) and exits. The wrapper, its subreaper, finds the daemon among its
// descendants and reports it; the test then ends the daemon.
TEST_F(GatedChildTest, ReportsProcessesThatLeftTheGroup) {
  std::string pid_file = dir_ + "/daemon";
  auto child = GatedChild::Fork({"sh", "-c",
                                 "setsid sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file +
                                     ".tmp " + pid_file + "; exec sleep 1000' &"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  int64_t daemon = 0;
  bool reported = false;
  // The timeout only bounds a failing test; the callback ends the daemon.
  TimeoutPolicy policy{.timeout = std::chrono::seconds(20),
                       .grace = std::chrono::milliseconds(100),
                       .rescan = std::chrono::milliseconds(5)};
  auto status = child->Wait(policy, {.on_job_processes = [&](const std::vector<ProcessRef>& ps) {
                              // The daemon may be found before it wrote its pid.
                              std::string text;
                              for (int i = 0; i < 2000 && text.empty(); ++i) {
                                text = Read("daemon");
                                if (text.empty()) usleep(10'000);
                              }
                              if (text.empty()) return;
                              daemon = std::stoll(text);
                              for (const ProcessRef& p : ps) {
                                if (p.pid != daemon) continue;
                                reported = true;
                                kill(static_cast<pid_t>(daemon), SIGKILL);
                              }
                            }});
  EXPECT_TRUE(reported) << "daemon " << daemon << " was never reported";
  EXPECT_EQ(status.value_or(-1), 0);
}

// Issue 14: --timeout must stop a daemon that left the job's group too; the
// wrapper would otherwise wait for it (its subreaper) for 1000 s. The
// daemon, started in the background by sh, ignores SIGINT, so SIGTERM ends it.
TEST_F(GatedChildTest, TimeoutStopsADaemonThatLeftTheGroup) {
  std::string pid_file = dir_ + "/daemon";
  auto child = GatedChild::Fork({"sh", "-c",
                                 "setsid sh -c 'echo $$ > " + pid_file + "; exec sleep 1000' & " +
                                     "while [ ! -s " + pid_file + " ]; do sleep 0.01; done"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Start({}).ok());
  TimeoutPolicy policy{.timeout = std::chrono::milliseconds(300),
                       .grace = std::chrono::milliseconds(200)};
  auto status = child->Wait(policy);
  ASSERT_TRUE(status.ok());
  int64_t daemon = std::stoll(Read("daemon"));
  EXPECT_NE(kill(static_cast<pid_t>(daemon), 0), 0) << "the daemon was reaped by the wrapper";
}

// Issue 14: where the host offers a cgroup v2, the job runs in a cgroup of
// its own, which also holds a daemon that left the group, and which is
// removed once the job is over.
TEST_F(GatedChildTest, JobRunsInItsOwnCgroupWhichIsRemovedAfterIt) {
  auto child = GatedChild::Fork(
      {"sh", "-c", "setsid sh -c 'cat /proc/self/cgroup > " + dir_ + "/daemon' & wait"});
  ASSERT_TRUE(child.ok());
  std::optional<ProcessInfo> info = LinuxProcessTable().FindBasic(child->pid());
  ASSERT_TRUE(info.has_value());
  absl::StatusOr<std::string> cgroup = child->EnterCgroup(info->start_ticks);
  if (!cgroup.ok()) {
    child->Abort();
    GTEST_SKIP() << "no writable cgroup v2 here (" << cgroup.status() << ")";
  }
  ProcessRef leader{child->pid(), info->start_ticks};
  EXPECT_TRUE(cgroup->ends_with("/" + JobCgroupName(leader))) << *cgroup;
  EXPECT_TRUE(std::filesystem::is_directory(*cgroup));
  ASSERT_TRUE(child->Start({}).ok());
  EXPECT_EQ(child->Wait({}).value_or(-1), 0);
  EXPECT_NE(Read("daemon").find("0::/"), std::string::npos);
  EXPECT_NE(Read("daemon").find(JobCgroupName(leader) + "\n"), std::string::npos) << Read("daemon");
  EXPECT_FALSE(std::filesystem::exists(*cgroup)) << "removed once the job is over";
}

// A job that never starts (the reservation failed) leaves no cgroup behind.
TEST_F(GatedChildTest, AbortRemovesTheCgroup) {
  auto child = GatedChild::Fork({"true"});
  ASSERT_TRUE(child.ok());
  std::optional<ProcessInfo> info = LinuxProcessTable().FindBasic(child->pid());
  ASSERT_TRUE(info.has_value());
  absl::StatusOr<std::string> cgroup = child->EnterCgroup(info->start_ticks);
  child->Abort();
  if (!cgroup.ok()) GTEST_SKIP() << "no writable cgroup v2 here (" << cgroup.status() << ")";
  EXPECT_FALSE(std::filesystem::exists(*cgroup));
}

}  // namespace
}  // namespace canhazgpu::host
