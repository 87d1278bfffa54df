// The first-come-first-served queue and the run lifecycle with real
// processes and signals: arrival order with partial holds, backfill, --wait
// expiry, a killed waiter, and workers that outlive the command.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "integration/cli_runner.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class CliQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "4"}).exit_code, 0);
  }
  json Queue() { return json::parse(host_.Run({"queue", "--json"}).out); }
  json Status() { return json::parse(host_.Run({"status", "--json"}).out); }

  CliHost host_;
};

TEST_F(CliQueueTest, HeadHoldsWhatFreesAndNewcomersQueueBehindIt) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "3"}).exit_code, 0);
  int big = host_.Spawn({"reserve", "-g", "2", "--note", "big"});
  // The head takes the one free GPU and holds it.
  ASSERT_TRUE(Eventually([&] {
    json q = Queue();
    return q["total_waiting"] == 1 && q["entries"][0]["held_gpus"].size() == 1;
  }));
  EXPECT_EQ(Queue()["entries"][0]["note"], "big");
  CliResult newcomer = host_.Run({"reserve", "-g", "1", "--nonblock"});
  EXPECT_EQ(newcomer.exit_code, 3);
  EXPECT_THAT(newcomer.err, HasSubstr("already waiting"));
  // Strict order: even a GPU that frees up now goes to the head, not to the
  // newcomer who asks at the same moment.
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(big), 0);
  EXPECT_EQ(Queue()["total_waiting"], 0);
  int held_by_big = 0;
  for (const json& g : Status()) held_by_big += g.value("note", "") == "big";
  EXPECT_EQ(held_by_big, 2);
}

// Three waiters of sizes 3, 1 and 2 behind a full pool. When one GPU
// frees, the 1-GPU waiter could be served at once, but the head (3) is
// first: it holds that GPU, and everyone else keeps waiting in order.
TEST_F(CliQueueTest, ThreeWaitersOfDifferentSizesAreServedInArrivalOrder) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4", "--note", "owner"}).exit_code, 0);
  int three = host_.Spawn({"reserve", "-g", "3", "--note", "three"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  int one = host_.Spawn({"reserve", "-g", "1", "--note", "one"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 2; }));
  int two = host_.Spawn({"reserve", "-g", "2", "--note", "two"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 3; }));
  json q = Queue();
  EXPECT_EQ(q["entries"][0]["note"], "three");
  EXPECT_EQ(q["entries"][1]["note"], "one");
  EXPECT_EQ(q["entries"][2]["note"], "two");

  ASSERT_EQ(host_.Run({"release", "-G", "0"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Queue()["entries"][0]["held_gpus"].size() == 1; }));
  q = Queue();
  EXPECT_EQ(q["total_waiting"], 3) << "the 1-GPU waiter must not overtake the head";
  EXPECT_EQ(q["entries"][1]["held_gpus"].size(), 0u);

  // Three more free: the head completes with 3, the next takes the last one.
  ASSERT_EQ(host_.Run({"release", "-G", "1,2,3"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(three), 0);
  EXPECT_EQ(ExitCodeOf(one), 0);
  q = Queue();
  ASSERT_EQ(q["total_waiting"], 1);
  EXPECT_EQ(q["entries"][0]["note"], "two");
  EXPECT_EQ(q["entries"][0]["position"], 1);

  int gpu_of_one = -1;
  for (const json& g : Status()) {
    if (g.value("note", "") == "one") gpu_of_one = g["gpu_id"].get<int>();
  }
  ASSERT_GE(gpu_of_one, 0);
  ASSERT_EQ(host_.Run({"release", "-G", std::to_string(gpu_of_one)}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Queue()["entries"][0]["held_gpus"].size() == 1; }));
  kill(two, SIGTERM);
  EXPECT_EQ(ExitCodeOf(two), 128 + SIGTERM);
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

// Backfill: the head waits for the one 80 GB GPU (busy); a newcomer asking
// for any GPU is served at once with a 40 GB one the head cannot use, and
// the 80 GB GPU still goes to the head when it frees.
TEST_F(CliQueueTest, NewcomerGetsAGpuTheSelectorHeadCannotUseAtOnce) {
  WriteFile(host_.fake_host(), R"({"gpus": [
    {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "memory_total_mib": 81920},
    {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-1", "memory_total_mib": 40960},
    {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-2", "memory_total_mib": 40960}]})");
  CliResult admin = host_.Run({"admin", "--provider", "fake", "--force"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  ASSERT_EQ(host_.Run({"reserve", "-G", "0", "--note", "owner"}).exit_code, 0);
  std::string log = host_.dir() + "/big.log";
  int big = host_.Spawn({"reserve", "--min-memory", "80Gi", "--note", "big"}, {.stderr_path = log});
  ASSERT_TRUE(
      Eventually([&] { return ReadFile(log).find("position 1 of 1") != std::string::npos; }));
  CliResult any = host_.Run({"reserve", "-g", "1", "--nonblock", "--short", "--note", "any"});
  ASSERT_EQ(any.exit_code, 0) << any.err;
  EXPECT_TRUE(any.out == "1" || any.out == "2") << any.out;
  CliResult another = host_.Run({"reserve", "-g", "2", "--nonblock"});
  EXPECT_EQ(another.exit_code, 3) << "only one 40 GB GPU is left";
  ASSERT_EQ(host_.Run({"release", "-G", "0"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(big), 0);
  EXPECT_EQ(Status()[0]["note"], "big");
}

// The head waits for GPUs 0 and 1 (busy): a newcomer for two GPUs gets 2 and
// 3 at once; a newcomer for GPU 1 by id queues behind the head, which gets
// GPU 1 when it frees; the head's ids never go to anyone else.
TEST_F(CliQueueTest, NewcomerGetsGpusTheIdsHeadDidNotAskForAndTheHeadKeepsItsIds) {
  ASSERT_EQ(host_.Run({"reserve", "-G", "0,1", "--note", "owner"}).exit_code, 0);
  std::string log = host_.dir() + "/pair.log";
  int pair = host_.Spawn({"reserve", "-G", "0,1", "--note", "pair"}, {.stderr_path = log});
  ASSERT_TRUE(
      Eventually([&] { return ReadFile(log).find("position 1 of 1") != std::string::npos; }));
  CliResult two = host_.Run({"reserve", "-g", "2", "--nonblock", "--short"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, "2,3");
  CliResult one = host_.Run({"reserve", "-G", "1", "--nonblock"});
  EXPECT_EQ(one.exit_code, 3);
  ASSERT_EQ(host_.Run({"release", "-G", "0,1"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(pair), 0);
  json status = Status();
  EXPECT_EQ(status[0]["note"], "pair");
  EXPECT_EQ(status[1]["note"], "pair");
}

// Shares do not starve a whole-GPU waiter: while it waits behind a share,
// new shares are refused (--nonblock) or wait behind it, each saying whom
// for; it gets the GPU as soon as the share ends, and the later share
// then waits for it to be released.
TEST_F(CliQueueTest, WholeGpuWaiterIsNotStarvedByAStreamOfShares) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "1", "--force"}).exit_code, 0);
  const std::string me = getpwuid(geteuid())->pw_name;
  ASSERT_EQ(host_.Run({"reserve", "--gpu-mem", "10Gi", "--note", "first"}).exit_code, 0);
  int whole = host_.Spawn({"reserve", "-g", "1", "--note", "whole"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  for (int i = 0; i < 3; ++i) {
    CliResult small = host_.Run({"reserve", "--gpu-mem", "1Gi", "--nonblock"});
    EXPECT_EQ(small.exit_code, 3) << small.out;
    EXPECT_THAT(small.err, HasSubstr("gpu 0: wanted whole by " + me + ", who queued first"));
  }
  std::string log = host_.dir() + "/later.log";
  int later = host_.Spawn({"reserve", "--gpu-mem", "1Gi", "--note", "later"}, {.stderr_path = log});
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(log).find("position 2 of 2") != std::string::npos;
  })) << ReadFile(log);
  EXPECT_THAT(ReadFile(log), HasSubstr("wanted whole by " + me + ", who queued first"));
  EXPECT_EQ(Status()[0]["shares"].size(), 1u) << "no share landed on the GPU it waits for";

  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);  // the first share
  EXPECT_EQ(ExitCodeOf(whole), 0);
  EXPECT_EQ(Status()[0]["note"], "whole");
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(log).find("gpu 0: reserved whole by " + me) != std::string::npos;
  })) << ReadFile(log);
  json q = Queue();
  ASSERT_EQ(q["total_waiting"], 1);
  EXPECT_EQ(q["entries"][0]["note"], "later");
  kill(later, SIGTERM);
  EXPECT_EQ(ExitCodeOf(later), 128 + SIGTERM);
}

// Nor a large share: small shares asked for while it waits leave it the
// memory it waits for, and it is served when that memory frees.
TEST_F(CliQueueTest, LargeShareIsNotStarvedBySmallOnes) {
  ASSERT_EQ(host_.Run({"admin", "--provider", "fake", "--gpus", "1", "--force"}).exit_code, 0);
  const std::string me = getpwuid(geteuid())->pw_name;
  ASSERT_EQ(host_.Run({"reserve", "--gpu-mem", "70Gi", "--note", "first"}).exit_code, 0);
  int large = host_.Spawn({"reserve", "--gpu-mem", "20Gi", "--note", "large"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  CliResult small = host_.Run({"reserve", "--gpu-mem", "1Gi", "--nonblock"});
  EXPECT_EQ(small.exit_code, 3) << small.out;
  EXPECT_THAT(small.err, HasSubstr("20Gi kept for " + me + ", who queued first"));
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(large), 0);
  EXPECT_EQ(Status()[0]["shares"][0]["note"], "large");
  EXPECT_EQ(host_.Run({"reserve", "--gpu-mem", "1Gi", "--nonblock"}).exit_code, 0);
}

// Progress goes to stderr (stdout is for the ids): position, holds, time,
// and who holds what the waiter needs. A stderr whose reader is gone does
// not kill the waiter.
TEST_F(CliQueueTest, WaiterPrintsProgressAndSurvivesABrokenStderr) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "3", "--note", "owner"}).exit_code, 0);
  std::string log = host_.dir() + "/progress";
  int printer = host_.Spawn({"reserve", "-g", "2"}, {.stderr_path = log});
  ASSERT_TRUE(Eventually([&] { return ReadFile(log).find("holding 1/2") != std::string::npos; }));
  std::string progress = ReadFile(log);
  EXPECT_THAT(progress, HasSubstr("position 1 of 1"));
  EXPECT_THAT(progress, HasSubstr("waited"));
  EXPECT_THAT(progress, HasSubstr("held by root (0,1,2)"));

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  close(pipe_fds[0]);  // nobody will ever read what the second waiter says
  int deaf = host_.Spawn({"reserve", "-g", "1"}, {.stderr_fd = pipe_fds[1]});
  close(pipe_fds[1]);
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 2; }));
  ASSERT_EQ(host_.Run({"release", "-G", "0,1,2"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(printer), 0);
  EXPECT_EQ(ExitCodeOf(deaf), 0) << "a broken stderr must not kill a waiter";
}

// `nohup canhazgpu reserve ...`: SIGHUP is ignored, so a hangup must not
// end the wait (blocked signals are delivered even when ignored).
TEST_F(CliQueueTest, WaiterStartedUnderNohupIgnoresHangups) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4"}).exit_code, 0);
  int waiter = host_.Spawn({"reserve", "-g", "1"}, {.ignore_signals = {SIGHUP}});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  kill(waiter, SIGHUP);
  ASSERT_EQ(host_.Run({"release"}).exit_code, 0);
  EXPECT_EQ(ExitCodeOf(waiter), 0);
}

TEST_F(CliQueueTest, WaitExpiresWithExitThreeAndLeavesNoTrace) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4"}).exit_code, 0);
  CliResult r = host_.Run({"reserve", "-g", "1", "--wait", "1s"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--wait"));
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

TEST_F(CliQueueTest, KilledWaiterLeavesTheQueueAndItsHoldsReturn) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "3"}).exit_code, 0);
  int waiter = host_.Spawn({"reserve", "-g", "2"});
  ASSERT_TRUE(Eventually([&] {
    json q = Queue();
    return q["total_waiting"] == 1 && q["entries"][0]["held_gpus"].size() == 1;
  }));
  kill(waiter, SIGKILL);
  ExitCodeOf(waiter);
  // Noticed by liveness at the next command, not after a timeout.
  EXPECT_EQ(Queue()["total_waiting"], 0);
  int available = 0;
  for (const json& g : Status()) available += g["status"] == "AVAILABLE";
  EXPECT_EQ(available, 1);
}

TEST_F(CliQueueTest, InterruptedWaiterExits130AndLeaves) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4"}).exit_code, 0);
  int waiter = host_.Spawn({"reserve", "-g", "1"});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  kill(waiter, SIGINT);
  EXPECT_EQ(ExitCodeOf(waiter), 130);
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

// Issue 14: the provider fails as a whole while a request waits. The waiter
// stops at once with the provider's message and leaves the queue, rather
// than waiting forever behind GPUs that are all in error.
TEST_F(CliQueueTest, WaiterWhoseProviderFailsStopsWithItsMessage) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4"}).exit_code, 0);
  std::string log = host_.dir() + "/waiter.log";
  int waiter = host_.Spawn({"reserve", "-g", "1"}, {.stderr_path = log});
  ASSERT_TRUE(Eventually([&] { return Queue()["total_waiting"] == 1; }));
  WriteFile(host_.fake_host(), "{not json");
  bool stopped = Eventually([&] { return ProcessGone(waiter); });
  if (!stopped) kill(waiter, SIGKILL);
  EXPECT_TRUE(stopped) << ReadFile(log);
  EXPECT_EQ(ExitCodeOf(waiter), 1);
  EXPECT_THAT(ReadFile(log), HasSubstr("cannot query GPUs"));
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

TEST_F(CliQueueTest, ImpossibleRequestsFailAtOnceAndNeverQueue) {
  ASSERT_EQ(host_.Run({"reserve", "-g", "4"}).exit_code, 0);
  EXPECT_EQ(host_.Run({"reserve", "-g", "5"}).exit_code, 2);
  EXPECT_EQ(host_.Run({"run", "-G", "4", "--", "true"}).exit_code, 2);
  EXPECT_EQ(Queue()["total_waiting"], 0);
}

// vLLM-style: the command exits, a worker it started keeps running. The
// GPU stays reserved (and says so) until the worker exits too.
TEST_F(CliQueueTest, RunKeepsGpusWhileWorkersOutliveTheCommand) {
  std::string fifo = host_.dir() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int run = host_.Spawn({"run", "-G", "2", "--", "sh", "-c", "(read x < " + fifo + ") & exit 0"});
  ASSERT_TRUE(Eventually([&] {
    json g = Status()[2];
    return g["status"] == "IN_USE" && g.contains("command_exited_at");
  }));
  EXPECT_THAT(Status()[2]["details"].get<std::string>(), HasSubstr("other processes still run"));
  int fd = open(fifo.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "go\n", 3), 3);
  close(fd);
  EXPECT_EQ(ExitCodeOf(run), 0);
  EXPECT_EQ(Status()[2]["status"], "AVAILABLE");
}

}  // namespace
}  // namespace canhazgpu::testing
