#include "daemon/log_lines.h"

#include <unistd.h>

#include <memory>

#include "core/duration.h"
#include "core/mutex.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::daemon {

std::string FormatLogLine(LogFormat format, LogLevel level, TimePoint now, const std::string& raw) {
  const std::string line = EscapeForDisplay(raw);
  if (format == LogFormat::kJson) {
    return StrCat(
        nlohmann::json{
            {"time", FormatTimestamp(now)}, {"level", LogLevelName(level)}, {"msg", line}}
            .dump(),
        "\n");
  }
  if (level == LogLevel::kInfo) return StrCat("k8shazgpu-node: ", line, "\n");
  return StrCat("k8shazgpu-node: ", LogLevelName(level), ": ", line, "\n");
}

Log::Sink StderrLogSink(LogFormat format, const Clock& clock) {
  auto mu = std::make_shared<Mutex>();
  return [format, &clock, mu](LogLevel level, const std::string& raw) {
    const std::string text = FormatLogLine(format, level, clock.Now(), raw);
    MutexLock lock(*mu);
    // A short write to a pipe that is gone is nothing to log about.
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  };
}

}  // namespace canhazgpu::daemon
