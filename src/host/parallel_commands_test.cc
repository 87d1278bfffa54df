#include "host/parallel_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

namespace canhazgpu::host {
namespace {

using ::testing::HasSubstr;

TEST(ParallelCommandsTest, CapturesOutputAndExitCodesOfEach) {
  auto results = RunInParallel(
      {{"sh", "-c", "echo out; echo err >&2; exit 3"}, {"printf", "%s", "a b; $(x)"}, {"false"}},
      std::chrono::seconds(20));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].exit_code, 3);
  EXPECT_EQ(results[0].out, "out\n");
  EXPECT_EQ(results[0].err, "err\n");
  // Arguments are passed as they are: no shell sees them.
  EXPECT_EQ(results[1].out, "a b; $(x)");
  EXPECT_EQ(results[1].exit_code, 0);
  EXPECT_EQ(results[2].exit_code, 1);
}

TEST(ParallelCommandsTest, KillsWhatRunsPastTheDeadlineAndKeepsTheRest) {
  auto results =
      RunInParallel({{"sleep", "600"}, {"echo", "quick"}}, std::chrono::milliseconds(200));
  EXPECT_TRUE(results[0].timed_out);
  EXPECT_EQ(results[0].exit_code, 128 + 9);
  EXPECT_FALSE(results[1].timed_out);
  EXPECT_EQ(results[1].out, "quick\n");
}

TEST(ParallelCommandsTest, ReportsProgramsThatCannotStart) {
  auto results = RunInParallel({{"/nonexistent/ssh", "host"}}, std::chrono::seconds(5));
  EXPECT_EQ(results[0].exit_code, -1);
  EXPECT_THAT(results[0].start_error, HasSubstr("No such file"));
}

// The dashboard blocks SIGTERM in every thread to take it itself; the
// programs it runs (ssh) must not inherit that, or they could not be stopped.
TEST(ParallelCommandsTest, ChildrenStartWithNoBlockedSignals) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  auto results =
      RunInParallel({{"grep", "^SigBlk:", "/proc/self/status"}}, std::chrono::seconds(20));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(results[0].out, "SigBlk:\t0000000000000000\n");
}

TEST(ParallelCommandsTest, BoundsCapturedOutput) {
  auto results =
      RunInParallel({{"sh", "-c", "head -c 100000 /dev/zero"}}, std::chrono::seconds(20), 1000);
  EXPECT_EQ(results[0].out.size(), 1000u);
  EXPECT_EQ(results[0].exit_code, 0);
}

}  // namespace
}  // namespace canhazgpu::host
