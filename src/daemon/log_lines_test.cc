#include "daemon/log_lines.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::daemon {
namespace {

const TimePoint kNoon = TimePoint(std::chrono::seconds(1'700'000'000));

TEST(LogLinesTest, TextNamesTheLevelWhenItIsNotInfo) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kInfo, kNoon, "published 4 devices"),
            "k8shazgpu-node: published 4 devices\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kWarning, kNoon, "cannot read node n"),
            "k8shazgpu-node: warning: cannot read node n\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kError, kNoon, "x"),
            "k8shazgpu-node: error: x\n");
}

TEST(LogLinesTest, JsonHasTimeLevelAndMessage) {
  const std::string line = FormatLogLine(LogFormat::kJson, LogLevel::kWarning, kNoon, "lost gpu 1");
  ASSERT_EQ(line.back(), '\n');
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["level"], "warning");
  EXPECT_EQ(parsed["msg"], "lost gpu 1");
  EXPECT_EQ(parsed["time"], "2023-11-14T22:13:20.000Z");
}

TEST(LogLinesTest, ALineFromOthersStaysOneLineOfValidUtf8) {
  const std::string forged = "claim a\nk8shazgpu-node: registered with the kubelet\xff";
  const std::string text = FormatLogLine(LogFormat::kText, LogLevel::kInfo, kNoon, forged);
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
  EXPECT_EQ(text.find('\xff'), std::string::npos) << text;
  const std::string json = FormatLogLine(LogFormat::kJson, LogLevel::kInfo, kNoon, forged);
  EXPECT_EQ(json.find('\n'), json.size() - 1);
  nlohmann::json parsed;  // a discarded parse is a warning
  EXPECT_NO_THROW(parsed = nlohmann::json::parse(json));
  EXPECT_EQ(parsed["msg"].get<std::string>().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace canhazgpu::daemon
