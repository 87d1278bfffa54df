// The first-come-first-served queue and the run lifecycle with real
// processes and signals: strict order with partial holds, --wait expiry, a
// killed waiter, and workers that outlive the command.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
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

int ExitCodeOf(int pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

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
