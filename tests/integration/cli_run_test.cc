// `canhazgpu run` as people use it: on a terminal (through a real
// pseudo-terminal), through an ssh disconnect, with the command or the
// wrapper killed, and with workers that outlive both.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "integration/cli_runner.h"
#include "integration/terminal_session.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class CliRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "2"}).exit_code, 0);
  }
  json Status() { return json::parse(host_.Run({"status", "--json"}).out); }
  std::string File(const std::string& name) { return host_.dir() + "/" + name; }
  // The pid of the job on GPU 0 once it is IN_USE; 0 if it never is.
  int JobOnceInUse() {
    int job = 0;
    Eventually([&] {
      json s = Status()[0];
      if (s["status"] != "IN_USE") return false;
      job = s["pid"].get<int>();
      return true;
    });
    return job;
  }
  // A shell loop that runs until the test creates `name`.
  std::string UntilFile(const std::string& name) {
    return "while [ ! -f " + File(name) + " ]; do sleep 0.02; done";
  }

  void KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives();
  void TimeoutStopsASetsidDaemonOfTheJob();

  CliHost host_;
};

// The same with the job's cgroup turned off: the subreaper path, as on a
// host that offers no cgroup.
class CliRunWithoutCgroupTest : public CliRunTest {
 protected:
  void SetUp() override {
    host_.env()["CANHAZGPU_RUN_NO_CGROUP"] = "1";
    CliRunTest::SetUp();
  }
};

// Where the host offers a writable cgroup v2 (root, or a delegated subtree):
// the job runs in a cgroup of its own. Skipped, saying why, elsewhere.
class CliRunCgroupTest : public CliRunTest {
 protected:
  void SetUp() override {
    std::string why;
    std::optional<std::string> parent = WritableCgroup2(&why);
    if (!parent) GTEST_SKIP() << "no writable cgroup v2 for this user: " << why;
    parent_ = *parent;
    CliRunTest::SetUp();
  }
  // The last component of the cgroup v2 path that a job wrote to the file
  // `name` (from /proc/self/cgroup); "" until the file is complete.
  std::string CgroupNameIn(const std::string& name) {
    std::string text = ReadFile(File(name));
    size_t at = text.find("0::/");
    size_t end = text.find('\n', at);
    if (at == std::string::npos || end == std::string::npos) return "";
    std::string path = text.substr(at + 3, end - at - 3);
    return path.substr(path.rfind('/') + 1);
  }

  std::string parent_;
};

// The command owns the terminal: it sees a TTY, reads what is typed (a
// background process group reading the terminal would be stopped instead).
TEST_F(CliRunTest, InteractiveCommandReadsAndWritesTheTerminal) {
  TerminalSession term(host_, {"run", "-g", "1", "--", "sh", "-c",
                               "[ -t 0 ] && [ -t 1 ] && echo on-a-tty; printf 'name? '; "
                               "read name; echo \"hello $name\""});
  ASSERT_TRUE(term.WaitFor("name? ")) << term.screen();
  EXPECT_THAT(term.screen(), HasSubstr("on-a-tty"));
  term.Type("ada\n");
  ASSERT_TRUE(term.WaitFor("hello ada")) << term.screen();
  EXPECT_EQ(term.Wait(), 0);
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// Ctrl-C and Ctrl-\ are the command's to handle. Here it catches each one
// and goes on; had they reached the wrapper, the job would have been cut
// short or the wrapper would have died, and the exit status would differ.
TEST_F(CliRunTest, CtrlCAndCtrlBackslashReachTheCommandNotTheWrapper) {
  TerminalSession term(
      host_, {"run", "-g", "1", "--", "sh", "-c",
              // Each trap says it ran only after its file exists, so the next
              // key cannot kill the trap's own `touch`.
              "trap 'touch " + File("int") + "; echo caught-INT' INT; trap 'touch " + File("quit") +
                  "; echo caught-QUIT' QUIT; echo ready; " + UntilFile("int") + "; " +
                  UntilFile("quit") + "; echo finished; exit 7"});
  ASSERT_TRUE(term.WaitFor("ready")) << term.screen();
  EXPECT_EQ(Status()[0]["status"], "IN_USE");
  term.Type("\x03");  // Ctrl-C
  ASSERT_TRUE(term.WaitFor("caught-INT")) << term.screen();
  term.Type("\x1c");  // Ctrl-backslash
  ASSERT_TRUE(term.WaitFor("finished")) << term.screen();
  EXPECT_THAT(term.screen(), HasSubstr("caught-QUIT"));
  EXPECT_EQ(term.Wait(), 7);
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// ssh disconnects: the terminal hangs up. A job that survives hangups
// (nohup-style) keeps its GPU, and the wrapper lives on to release it when
// the job finishes.
TEST_F(CliRunTest, HangupKeepsTheReservationOfAJobThatKeepsRunning) {
  TerminalSession term(host_, {"run", "-g", "1", "--", "sh", "-c",
                               "trap '' HUP; echo started; " + UntilFile("stop")});
  ASSERT_TRUE(term.WaitFor("started")) << term.screen();
  term.HangUp();
  // The wrapper is not stopped by the hangup: it still answers for the job.
  EXPECT_EQ(Status()[0]["status"], "IN_USE");
  EXPECT_EQ(host_.Run({"reserve", "-g", "2", "--nonblock"}).exit_code, 3);
  EXPECT_FALSE(ProcessGone(term.pid()));
  WriteFile(File("stop"), "");
  EXPECT_EQ(term.Wait(), 0) << "the wrapper must outlive the hangup and report the job's status";
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// A job that does not survive the hangup ends, and so does its reservation.
TEST_F(CliRunTest, HangupEndsAJobThatDoesNotIgnoreIt) {
  TerminalSession term(host_, {"run", "-g", "1", "--", "sh", "-c", "echo started; sleep 60"});
  ASSERT_TRUE(term.WaitFor("started")) << term.screen();
  term.HangUp();
  EXPECT_EQ(term.Wait(), 128 + SIGHUP);
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// The command is killed: the wrapper sees it go and releases before it
// exits, so the GPUs are free the moment the wrapper's status is known.
TEST_F(CliRunTest, KilledCommandReleasesAtOnce) {
  int wrapper = host_.Spawn({"run", "-g", "2", "--", "sleep", "60"});
  int job = 0;
  ASSERT_TRUE(Eventually([&] {
    json s = Status();
    if (s[1]["status"] != "IN_USE") return false;
    job = s[1]["pid"].get<int>();
    return true;
  }));
  kill(job, SIGKILL);
  EXPECT_EQ(ExitCodeOf(wrapper), 128 + SIGKILL);
  for (const json& g : Status()) EXPECT_EQ(g["status"], "AVAILABLE");
}

// vLLM-style worker that outlives the command, and then the wrapper is
// SIGKILLed: nothing is left to wait for the worker, but the worker is in the
// job's process group, so every later command still sees the job alive.
TEST_F(CliRunTest, KilledWrapperKeepsGpusWhileAWorkerOfTheJobLives) {
  int wrapper = host_.Spawn({"run", "-g", "1", "--", "sh", "-c",
                             "(" + UntilFile("stop") + ") & echo $! > " + File("worker")});
  ASSERT_TRUE(Eventually([&] { return Status()[0].contains("command_exited_at"); }));
  int worker = std::stoi(ReadFile(File("worker")));
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);
  json during = Status()[0];
  EXPECT_EQ(during["status"], "IN_USE");
  EXPECT_THAT(during["details"].get<std::string>(), HasSubstr("other processes still run"));
  EXPECT_EQ(host_.Run({"reserve", "-g", "2", "--nonblock"}).exit_code, 3);
  WriteFile(File("stop"), "");
  ASSERT_TRUE(Eventually([&] { return ProcessGone(worker); }));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// A wrapper whose output pipe is gone keeps running the job and releases.
TEST_F(CliRunTest, BrokenStderrDoesNotKillTheWrapper) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  close(pipe_fds[0]);
  int wrapper = host_.Spawn({"run", "-g", "1", "--", "sh", "-c", UntilFile("stop")},
                            {.stderr_fd = pipe_fds[1]});
  close(pipe_fds[1]);
  ASSERT_TRUE(Eventually([&] { return Status()[0]["status"] == "IN_USE"; }));
  WriteFile(File("stop"), "");
  EXPECT_EQ(ExitCodeOf(wrapper), 0);
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// A shell command that starts a daemon outside the job's process group
// (setsid), which writes its pid to `pid_file` and sleeps; the command itself
// exits at once.
std::string SetsidDaemon(const std::string& pid_file, int seconds) {
  return "setsid sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file +
         "; exec sleep " + std::to_string(seconds) + "' &";
}

// Issue 14: the job's daemon left its process group and the wrapper is
// SIGKILLed. The wrapper had recorded the daemon, so its GPU stays reserved
// and nobody else is given it until the daemon exits.
void CliRunTest::KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives() {
  int wrapper = host_.Spawn({"run", "-G", "0", "--", "sh", "-c", SetsidDaemon(File("daemon"), 60)});
  int daemon = 0;
  ASSERT_TRUE(Eventually([&] {
    json s = Status()[0];
    if (!s.contains("job_pids") || !std::filesystem::exists(File("daemon"))) return false;
    daemon = std::stoi(ReadFile(File("daemon")));
    return s["job_pids"] == json::array({daemon});
  })) << Status().dump();
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);
  EXPECT_EQ(Status()[0]["status"], "IN_USE");
  EXPECT_EQ(host_.Run({"reserve", "-G", "0", "--nonblock"}).exit_code, 3);
  kill(daemon, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// Issue 14: --timeout stops the daemon too (it would otherwise keep the
// wrapper, its subreaper, waiting for 600 s, and the GPU with it).
void CliRunTest::TimeoutStopsASetsidDaemonOfTheJob() {
  int wrapper = host_.Spawn({"run", "-G", "0", "--timeout", "1s", "--grace", "1s", "--", "sh", "-c",
                             SetsidDaemon(File("daemon"), 600) + " sleep 600"});
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(File("daemon")); }));
  int daemon = std::stoi(ReadFile(File("daemon")));
  EXPECT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  if (!ProcessGone(daemon)) kill(daemon, SIGKILL);
  // The command itself ends at the first signal; the daemon, started in
  // the background, ignores SIGINT and ends at SIGTERM.
  EXPECT_EQ(ExitCodeOf(wrapper), 124);  // the timeout ended it (issue 33)
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// Where the host offers a cgroup these run with it (CliRunTest) and without
// (CliRunWithoutCgroupTest): the subreaper and the recorded processes alone
// must do it too.
TEST_F(CliRunTest, KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives) {
  KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives();
}
TEST_F(CliRunWithoutCgroupTest, KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives) {
  KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives();
}
TEST_F(CliRunTest, TimeoutStopsASetsidDaemonOfTheJob) { TimeoutStopsASetsidDaemonOfTheJob(); }
TEST_F(CliRunWithoutCgroupTest, TimeoutStopsASetsidDaemonOfTheJob) {
  TimeoutStopsASetsidDaemonOfTheJob();
}

// Issue 14: a SIGSTOPped wrapper cannot reap its exited job; the job is over
// all the same, so its GPU is free before the wrapper is continued.
TEST_F(CliRunTest, StoppedWrapperDoesNotHoldTheGpusOfAnExitedJob) {
  int wrapper = host_.Spawn({"run", "-G", "0", "--", "sh", "-c", UntilFile("stop")});
  const int job = JobOnceInUse();
  ASSERT_GT(job, 0);
  kill(wrapper, SIGSTOP);
  WriteFile(File("stop"), "");
  ASSERT_TRUE(Eventually([&] { return ProcessGone(job); }));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
  EXPECT_EQ(host_.Run({"reserve", "-G", "0", "--nonblock"}).exit_code, 0);
  kill(wrapper, SIGCONT);
  EXPECT_EQ(ExitCodeOf(wrapper), 0);
}

// Issue 14: a job's reservation that ended while a process of the job
// still uses the GPU (here released by hand) leaves the GPU UNRESERVED with
// the process's owner, never AVAILABLE, and it is not handed out.
TEST_F(CliRunTest, GpuUsedByAReleasedJobShowsAsUnreserved) {
  int wrapper = host_.Spawn({"run", "-G", "0", "--", "sh", "-c", SetsidDaemon(File("daemon"), 60)});
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(File("daemon")); }));
  int daemon = std::stoi(ReadFile(File("daemon")));
  WriteFile(host_.fake_host(), R"({"gpus": [
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "memory_total_mib": 81559,
       "processes": [{"pid": )" + std::to_string(daemon) +
                                   R"(, "used_memory_mib": 20480}]},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b", "memory_total_mib": 81559}]})");
  ASSERT_EQ(host_.Run({"release", "-G", "0"}).exit_code, 0);
  json gpu = Status()[0];
  EXPECT_EQ(gpu["status"], "UNRESERVED") << gpu.dump();
  EXPECT_EQ(host_.Run({"reserve", "-G", "0", "--nonblock"}).exit_code, 3);
  kill(daemon, SIGKILL);
  EXPECT_EQ(ExitCodeOf(wrapper), 0);
}

// A shell command that waits for the test to create `go`, then starts a
// daemon in a session of its own (setsid) that writes its pid to `pid_file`
// and sleeps, and exits.
std::string SetsidDaemonOnceToldTo(const std::string& go, const std::string& pid_file) {
  return "while [ ! -f " + go + " ]; do sleep 0.02; done; " + SetsidDaemon(pid_file, 60);
}

// Issue 14, the case docs/jobs.md listed as impossible without a cgroup: the
// wrapper is SIGKILLed, and only then does the job start a daemon that leaves
// its group and session (so no rescan could ever have seen it) and exit. The
// wrapper is gone, the command and its group are gone, and the daemon is
// re-parented to init: only the job's cgroup still holds it. Its GPU stays
// reserved until the daemon exits; the empty cgroup the wrapper left behind
// is removed by the next `run`.
TEST_F(CliRunCgroupTest, DaemonStartedAfterTheWrapperWasKilledKeepsTheGpu) {
  int wrapper = host_.Spawn(
      {"run", "-G", "0", "--", "sh", "-c", SetsidDaemonOnceToldTo(File("go"), File("daemon"))});
  std::string cgroup;
  ASSERT_TRUE(Eventually([&] {
    json s = Status()[0];
    if (s["status"] != "IN_USE" || !s.contains("cgroup")) return false;
    cgroup = s["cgroup"].get<std::string>();
    return true;
  })) << Status().dump();
  EXPECT_EQ(cgroup.substr(0, cgroup.rfind('/')), parent_);
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);
  WriteFile(File("go"), "");
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(File("daemon")); }));
  int daemon = std::stoi(ReadFile(File("daemon")));
  json during = Status()[0];
  EXPECT_EQ(during["status"], "IN_USE") << during.dump();
  EXPECT_FALSE(during.contains("job_pids")) << "no wrapper was left to record the daemon";
  EXPECT_EQ(host_.Run({"reserve", "-G", "0", "--nonblock"}).exit_code, 3);
  // The command (the job's first process) has exited: only the daemon holds it.
  EXPECT_TRUE(Eventually([&] { return ProcessGone(during["pid"].get<int>()); }));
  EXPECT_EQ(Status()[0]["status"], "IN_USE");

  kill(daemon, SIGKILL);
  ASSERT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  EXPECT_TRUE(Eventually([&] { return Status()[0]["status"] == "AVAILABLE"; }));
  // The killed wrapper left the empty cgroup behind; the next `run` here (or
  // one of a test running beside this one) removes it.
  ASSERT_EQ(host_.Run({"run", "-G", "1", "--", "true"}).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(cgroup)) << "removed by the next run";
}

// Without a cgroup (as on a host that offers none) the same daemon is not
// seen: the GPU is free while it runs. This is the gap docs/jobs.md keeps
// listing for such hosts.
TEST_F(CliRunWithoutCgroupTest, DaemonStartedAfterTheWrapperWasKilledIsNotSeen) {
  int wrapper = host_.Spawn(
      {"run", "-G", "0", "--", "sh", "-c", SetsidDaemonOnceToldTo(File("go"), File("daemon"))});
  const int job = JobOnceInUse();
  ASSERT_GT(job, 0);
  EXPECT_FALSE(Status()[0].contains("cgroup"));
  kill(wrapper, SIGKILL);
  ExitCodeOf(wrapper);
  WriteFile(File("go"), "");
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(File("daemon")); }));
  int daemon = std::stoi(ReadFile(File("daemon")));
  ASSERT_TRUE(Eventually([&] { return ProcessGone(job); }));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
  EXPECT_FALSE(ProcessGone(daemon));
  kill(daemon, SIGKILL);
}

// Issue 14: --timeout ends a daemon that left the job's session and that
// keeps forking away from every scan - each generation starts the next in a
// new session and exits, ignoring SIGINT and SIGTERM - through cgroup.kill,
// which also takes forks in progress. Scanning and signalling pids one by one
// would keep missing it (and the wrapper would wait for it for ever).
TEST_F(CliRunCgroupTest, TimeoutKillsADaemonThatForksAwayFromEveryScan) {
  const std::string flee = File("flee.sh");
  WriteFile(flee,
            "trap '' INT TERM\n[ -f " + File("stop") + " ] && exit 0\nsetsid sh " + flee + " &\n");
  int wrapper = host_.Spawn({"run", "-G", "0", "--timeout", "1s", "--grace", "1s", "--", "sh", "-c",
                             "setsid sh " + flee + " & sleep 600"});
  std::string cgroup;
  ASSERT_TRUE(Eventually([&] {
    json s = Status()[0];
    if (!s.contains("cgroup")) return false;
    cgroup = s["cgroup"].get<std::string>();
    return true;
  }));
  bool ended = Eventually([&] { return ProcessGone(wrapper); });
  WriteFile(File("stop"), "");  // should the test fail: the chain ends itself
  ASSERT_TRUE(ended) << "the wrapper still waits for the daemon";
  EXPECT_EQ(ExitCodeOf(wrapper), 124);  // the timeout ended it (issue 33)
  EXPECT_FALSE(std::filesystem::exists(cgroup)) << "emptied, then removed by the wrapper";
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// Issue 14: the job, and a daemon that left its session, run in the job's
// own cgroup below the wrapper's, named after the job; status shows it; the
// wrapper removes it once the job has ended.
TEST_F(CliRunCgroupTest, JobRunsInItsOwnCgroupWhichIsRemovedWhenItEnds) {
  int wrapper =
      host_.Spawn({"run", "-G", "0", "--", "sh", "-c",
                   "setsid sh -c 'cat /proc/self/cgroup > " + File("daemon.tmp") + "; mv " +
                       File("daemon.tmp") + " " + File("daemon") + "' & " + UntilFile("stop")});
  ASSERT_TRUE(Eventually([&] { return !CgroupNameIn("daemon").empty(); }));
  json s = Status()[0];
  ASSERT_TRUE(s.contains("cgroup")) << s.dump();
  std::string cgroup = s["cgroup"].get<std::string>();
  EXPECT_EQ(cgroup, parent_ + "/" + CgroupNameIn("daemon"));
  EXPECT_THAT(cgroup, HasSubstr("/canhazgpu-job-" + std::to_string(s["pid"].get<int>()) + "-"));
  EXPECT_TRUE(std::filesystem::is_directory(cgroup));
  WriteFile(File("stop"), "");
  EXPECT_EQ(ExitCodeOf(wrapper), 0);
  EXPECT_FALSE(std::filesystem::exists(cgroup));
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

}  // namespace
}  // namespace canhazgpu::testing
