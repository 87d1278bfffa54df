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
  // A shell loop that runs until the test creates `name`.
  std::string UntilFile(const std::string& name) {
    return "while [ ! -f " + File(name) + " ]; do sleep 0.02; done";
  }

  CliHost host_;
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
TEST_F(CliRunTest, KilledWrapperKeepsGpusWhileASetsidDaemonOfTheJobLives) {
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
TEST_F(CliRunTest, TimeoutStopsASetsidDaemonOfTheJob) {
  int wrapper = host_.Spawn({"run", "-G", "0", "--timeout", "1s", "--grace", "1s", "--", "sh", "-c",
                             SetsidDaemon(File("daemon"), 600) + " sleep 600"});
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(File("daemon")); }));
  int daemon = std::stoi(ReadFile(File("daemon")));
  EXPECT_TRUE(Eventually([&] { return ProcessGone(daemon); }));
  if (!ProcessGone(daemon)) kill(daemon, SIGKILL);
  // The command itself ends at the first signal; the daemon, started in
  // the background, ignores SIGINT and ends at SIGTERM.
  EXPECT_EQ(ExitCodeOf(wrapper), 128 + SIGINT);
  EXPECT_EQ(Status()[0]["status"], "AVAILABLE");
}

// Issue 14: a SIGSTOPped wrapper cannot reap its exited job; the job is over
// all the same, so its GPU is free before the wrapper is continued.
TEST_F(CliRunTest, StoppedWrapperDoesNotHoldTheGpusOfAnExitedJob) {
  int wrapper = host_.Spawn({"run", "-G", "0", "--", "sh", "-c", UntilFile("stop")});
  int job = 0;
  ASSERT_TRUE(Eventually([&] {
    json s = Status()[0];
    if (s["status"] != "IN_USE") return false;
    job = s["pid"].get<int>();
    return true;
  }));
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

}  // namespace
}  // namespace canhazgpu::testing
