#include "kubesim/pod_logs.h"

#include <thread>

#include "gtest/gtest.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::kubesim {
namespace {

constexpr std::chrono::milliseconds kNoWait{0};

std::optional<std::string> ReadAll(PodLogs& logs, const LogQuery& query = {}) {
  LogCursor cursor;
  return logs.Read("ns", "pod", "c", query, cursor, kNoWait);
}

TEST(PodLogsTest, LinesArePiecedTogetherAcrossAppends) {
  host::FakeClock clock;
  PodLogs logs(clock);
  EXPECT_FALSE(logs.Started("ns", "pod", "c"));
  EXPECT_FALSE(ReadAll(logs));
  logs.Append("ns", "pod", "c", "a\nb");
  EXPECT_TRUE(logs.Started("ns", "pod", "c"));
  EXPECT_EQ(ReadAll(logs), "a\n");  // "b" is not a line yet
  logs.Append("ns", "pod", "c", "c\n\n");
  EXPECT_EQ(ReadAll(logs), "a\nbc\n\n");
  logs.Append("ns", "pod", "c", "tail without newline");
  logs.Finish("ns", "pod", "c");
  logs.Append("ns", "pod", "c", "after the end\n");  // ignored
  EXPECT_EQ(ReadAll(logs), "a\nbc\n\ntail without newline\n");
}

TEST(PodLogsTest, AStartedContainerHasAnEmptyLogBeforeItPrints) {
  host::FakeClock clock;
  PodLogs logs(clock);
  logs.Start("ns", "pod", "c");
  EXPECT_TRUE(logs.Started("ns", "pod", "c"));
  EXPECT_EQ(ReadAll(logs), "");
  logs.Append("ns", "pod", "c", "x\n");
  logs.Start("ns", "pod", "c");  // keeps what is there
  EXPECT_EQ(ReadAll(logs), "x\n");
}

TEST(PodLogsTest, ARestartedContainerStartsANewLog) {
  host::FakeClock clock;
  PodLogs logs(clock);
  logs.Append("ns", "pod", "c", "first run\n");
  logs.Finish("ns", "pod", "c");
  logs.Restart("ns", "pod", "c");
  logs.Append("ns", "pod", "c", "second run\n");
  EXPECT_EQ(ReadAll(logs), "second run\n");
}

TEST(PodLogsTest, TailSinceAndTimestamps) {
  host::FakeClock clock(FromEpochMillis(1'795'291'402'120));
  PodLogs logs(clock);
  logs.Append("ns", "pod", "c", "1\n2\n");
  clock.Advance(std::chrono::seconds(30));
  logs.Append("ns", "pod", "c", "3\n");
  EXPECT_EQ(ReadAll(logs, {.tail_lines = 2}), "2\n3\n");
  EXPECT_EQ(ReadAll(logs, {.tail_lines = 10}), "1\n2\n3\n");
  EXPECT_EQ(ReadAll(logs, {.since_seconds = 10}), "3\n");
  EXPECT_EQ(ReadAll(logs, {.tail_lines = 2, .since_seconds = 60}), "2\n3\n");
  EXPECT_EQ(ReadAll(logs, {.tail_lines = 1, .timestamps = true}), "2026-11-21T20:03:52.120Z 3\n");
}

TEST(PodLogsTest, AReaderGetsOnlyWhatIsNewAndTheEnd) {
  host::FakeClock clock;
  PodLogs logs(clock);
  logs.Append("ns", "pod", "c", "1\n");
  LogCursor cursor;
  EXPECT_EQ(logs.Read("ns", "pod", "c", {}, cursor, kNoWait), "1\n");
  EXPECT_EQ(logs.Read("ns", "pod", "c", {}, cursor, kNoWait), "");  // open, nothing new
  logs.Append("ns", "pod", "c", "2\n");
  EXPECT_EQ(logs.Read("ns", "pod", "c", {}, cursor, kNoWait), "2\n");
  logs.Finish("ns", "pod", "c");
  EXPECT_FALSE(logs.Read("ns", "pod", "c", {}, cursor, kNoWait));
}

TEST(PodLogsTest, AWaitingReaderWakesForNewOutputAndForAForgottenPod) {
  host::FakeClock clock;
  PodLogs logs(clock);
  logs.Append("ns", "pod", "c", "");
  LogCursor cursor;
  ASSERT_EQ(logs.Read("ns", "pod", "c", {}, cursor, kNoWait), "");
  std::thread writer([&] { logs.Append("ns", "pod", "c", "woke\n"); });
  std::string got;
  // Waits (up to a minute: the append wakes it long before) until it comes.
  while (got.empty()) got = *logs.Read("ns", "pod", "c", {}, cursor, std::chrono::minutes(1));
  writer.join();
  EXPECT_EQ(got, "woke\n");

  std::thread forgetter([&] { logs.Forget("ns", "pod"); });
  std::optional<std::string> after = "";
  while (after && after->empty()) {
    after = logs.Read("ns", "pod", "c", {}, cursor, std::chrono::minutes(1));
  }
  forgetter.join();
  EXPECT_FALSE(after);
  EXPECT_FALSE(logs.Started("ns", "pod", "c"));
}

}  // namespace
}  // namespace canhazgpu::kubesim
