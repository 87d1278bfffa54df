#include "core/duration.h"

#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

Duration Parse(std::string_view s) {
  auto d = ParseDuration(s);
  EXPECT_TRUE(d.ok()) << s << ": " << d.status();
  return d.value_or(Duration(0));
}

TEST(DurationTest, ParsesSingleUnits) {
  EXPECT_EQ(Parse("30s"), seconds(30));
  EXPECT_EQ(Parse("30m"), minutes(30));
  EXPECT_EQ(Parse("2h"), hours(2));
  EXPECT_EQ(Parse("1d"), hours(24));
}

TEST(DurationTest, ParsesDecimalsAndCompounds) {
  EXPECT_EQ(Parse("0.5h"), minutes(30));
  EXPECT_EQ(Parse("3.5d"), hours(84));
  EXPECT_EQ(Parse("1h30m"), minutes(90));
  EXPECT_EQ(Parse("1d2h3m4s"), hours(26) + minutes(3) + seconds(4));
}

TEST(DurationTest, RejectsBadInput) {
  for (std::string_view bad : {"", "30", "-5m", "5x", "h", "1.2.3h", "5 m", "1h30", "0s", "0.1s",
                               "abc", "1e5h", "99999d"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << "accepted '" << bad << "'";
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(d.status().message().find("invalid duration"), std::string_view::npos);
    }
  }
}

TEST(DurationTest, FormatsLikeCanhazgpu) {
  EXPECT_EQ(FormatDuration(seconds(5)), "0h 0m 5s");
  EXPECT_EQ(FormatDuration(hours(49)), "49h 0m 0s");
  EXPECT_EQ(FormatDuration(minutes(5) + seconds(30)), "0h 5m 30s");
  EXPECT_EQ(FormatDuration(seconds(-3)), "0h 0m 0s");
}

TEST(DurationTest, FormatsShort) {
  EXPECT_EQ(FormatDurationShort(seconds(45)), "45s");
  EXPECT_EQ(FormatDurationShort(minutes(5) + seconds(30)), "5m 30s");
  EXPECT_EQ(FormatDurationShort(hours(2) + minutes(5)), "2h 5m");
  EXPECT_EQ(FormatDurationShort(hours(76)), "3d 4h");
}

TEST(DurationTest, FormatsTimestampInUtc) {
  EXPECT_EQ(FormatTimestamp(FromEpochMillis(1795291402120)), "2026-11-21T20:03:22.120Z");
}

TEST(DurationTest, FormatsKubernetesTimeToTheSecond) {
  EXPECT_EQ(FormatTimestampSeconds(FromEpochMillis(1795291402920)), "2026-11-21T20:03:22Z");
  EXPECT_EQ(FormatTimestampSeconds(FromEpochMillis(-1)), "1969-12-31T23:59:59Z");
}

TEST(DurationTest, Issue14TimestampBefore1970HasNoNegativeMilliseconds) {
  // report --days 30000 printed "1944-10-04T18:24:02.-740Z".
  EXPECT_EQ(FormatTimestamp(FromEpochMillis(-1)), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatTimestamp(FromEpochMillis(-795291357740)), "1944-10-19T05:44:02.260Z");
  EXPECT_EQ(FormatTimestamp(FromEpochMillis(-1000)), "1969-12-31T23:59:59.000Z");
}

TEST(DurationTest, Issue14TimestampAtTheEndsOfTheClockIsWellFormed) {
  EXPECT_EQ(FormatTimestamp(TimePoint::min()), "1677-09-21T00:12:43.146Z");
  EXPECT_EQ(FormatTimestamp(TimePoint::max()), "2262-04-11T23:47:16.854Z");
}

}  // namespace
}  // namespace canhazgpu
