// A program's log. Each line has a level; the sink decides where lines go
// and how they look (k8shazgpu-node writes text or JSON lines to stderr),
// and the Log drops the lines under its least level. Copyable; as
// thread-safe as its sink.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace canhazgpu {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning", "error".
std::string_view LogLevelName(LogLevel level);
// The level LogLevelName names; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

class Log {
 public:
  using Sink = std::function<void(LogLevel, const std::string&)>;

  // Discards every line.
  Log() = default;
  explicit Log(Sink sink, LogLevel least = LogLevel::kInfo)
      : sink_(std::move(sink)), least_(least) {}

  // What was done, in steps a reader follows only when looking for a fault.
  void Debug(const std::string& line) const { Write(LogLevel::kDebug, line); }
  // What was done: registered, published, served.
  void Info(const std::string& line) const { Write(LogLevel::kInfo, line); }
  // Something is wrong and was worked around, or will be tried again.
  void Warning(const std::string& line) const { Write(LogLevel::kWarning, line); }
  // Something is wrong and stays so until someone acts.
  void Error(const std::string& line) const { Write(LogLevel::kError, line); }

  void Write(LogLevel level, const std::string& line) const {
    if (sink_ && level >= least_) sink_(level, line);
  }

 private:
  Sink sink_;
  LogLevel least_ = LogLevel::kInfo;
};

}  // namespace canhazgpu
