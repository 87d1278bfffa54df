#include "core/log.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

TEST(LogTest, LinesUnderTheLeastLevelAreDropped) {
  std::vector<std::pair<LogLevel, std::string>> lines;
  const Log log([&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); },
                LogLevel::kInfo);
  log.Debug("d");
  log.Info("i");
  log.Warning("w");
  log.Error("e");
  EXPECT_EQ(lines,
            (std::vector<std::pair<LogLevel, std::string>>{
                {LogLevel::kInfo, "i"}, {LogLevel::kWarning, "w"}, {LogLevel::kError, "e"}}));
  lines.clear();
  const Log quiet(log);  // a copy writes to the same sink
  Log([&](LogLevel level, const std::string& line) { lines.emplace_back(level, line); },
      LogLevel::kError)
      .Warning("dropped");
  EXPECT_TRUE(lines.empty());
  quiet.Info("kept");
  EXPECT_EQ(lines.size(), 1u);
  Log().Error("a default Log discards");  // and does not crash
}

TEST(LogTest, LevelNamesRoundTrip) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    EXPECT_EQ(ParseLogLevel(LogLevelName(level)), level);
  }
  EXPECT_EQ(LogLevelName(LogLevel::kWarning), "warning");
  EXPECT_EQ(ParseLogLevel("WARN"), std::nullopt);
  EXPECT_EQ(ParseLogLevel(""), std::nullopt);
}

}  // namespace
}  // namespace canhazgpu
