#include "cli/k8shazgpu/log_follow.h"

#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

TEST(LogResumeTest, StripsTimestampsAndJoinsSplitLines) {
  LogResume r;
  EXPECT_EQ(r.Feed("2026-11-24T07:30:01.120Z hel"), "");
  EXPECT_EQ(r.Feed("lo world\n2026-11-24T07:30:01.5Z  two spaces\n"), "hello world\n two spaces\n");
  EXPECT_EQ(r.Feed("2026-11-24T07:30:02Z no newline"), "");
  EXPECT_EQ(r.Flush(), "no newline");
}

TEST(LogResumeTest, AReconnectSkipsWhatWasPrintedEvenWithinOneTimestamp) {
  LogResume r;
  const std::string log =
      "2026-11-24T07:30:01.1Z a\n"
      "2026-11-24T07:30:01.2Z b\n"
      "2026-11-24T07:30:01.2Z b\n"
      "2026-11-24T07:30:01.2Z c\n"
      "2026-11-24T07:30:03Z d\n";
  // The first stream drops after the second "b".
  EXPECT_EQ(r.Feed(log.substr(0, 75)), "a\nb\nb\n");
  r.Restart();
  EXPECT_EQ(r.Feed(log), "c\nd\n");
  EXPECT_EQ(r.printed_lines(), 5);
  // A second drop right at the end repeats nothing.
  r.Restart();
  EXPECT_EQ(r.Feed(log), "");
}

TEST(LogResumeTest, TimesOrderAsTimesWhateverTheirFractionDigits) {
  EXPECT_LT(OrderedTime("2026-11-24T07:30:01.120001Z"), OrderedTime("2026-11-24T07:30:01.12001Z"));
  EXPECT_LT(OrderedTime("2026-11-24T07:30:01Z"), OrderedTime("2026-11-24T07:30:01.000000001Z"));
  EXPECT_EQ(OrderedTime("not a time"), "");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
