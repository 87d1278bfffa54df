#include "core/duration.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "absl/strings/str_format.h"
#include "core/strings.h"

namespace canhazgpu {
namespace {

constexpr double kMaxSeconds = 10.0 * 365 * 24 * 3600;

absl::Status BadDuration(std::string_view text) {
  return absl::InvalidArgumentError(
      StrCat("invalid duration '", text, "': use forms like 30s, 30m, 2h, 1d, 0.5h or 1h30m"));
}

double UnitSeconds(char unit) {
  switch (unit) {
    case 's':
      return 1;
    case 'm':
      return 60;
    case 'h':
      return 3600;
    case 'd':
      return 86400;
    default:
      return 0;
  }
}

}  // namespace

absl::StatusOr<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) return BadDuration(text);
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    // A number: digits with at most one decimal point, at least one digit.
    size_t start = i;
    bool seen_dot = false;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !seen_dot))) {
      seen_dot |= text[i] == '.';
      ++i;
    }
    std::string number(text.substr(start, i - start));
    if (number.empty() || number == "." || i == text.size()) return BadDuration(text);
    double unit = UnitSeconds(text[i]);
    if (unit == 0) return BadDuration(text);
    ++i;
    total += std::strtod(number.c_str(), nullptr) * unit;
    if (total > kMaxSeconds) {
      return absl::InvalidArgumentError(
          StrCat("invalid duration '", text, "': longer than 10 years"));
    }
  }
  auto millis = static_cast<int64_t>(std::llround(total * 1000));
  if (millis < 1000) {
    return absl::InvalidArgumentError(StrCat("invalid duration '", text, "': must be at least 1s"));
  }
  return Duration(millis);
}

std::string FormatDuration(Duration d) {
  int64_t secs = std::max<int64_t>(0, d.count() / 1000);
  return absl::StrFormat("%dh %dm %ds", secs / 3600, (secs / 60) % 60, secs % 60);
}

std::string FormatDurationShort(Duration d) {
  int64_t secs = std::max<int64_t>(0, d.count() / 1000);
  if (secs < 60) return StrCat(secs, "s");
  if (secs < 3600) return absl::StrFormat("%dm %ds", secs / 60, secs % 60);
  if (secs < 86400) return absl::StrFormat("%dh %dm", secs / 3600, (secs / 60) % 60);
  return absl::StrFormat("%dd %dh", secs / 86400, (secs / 3600) % 24);
}

std::string FormatTimestamp(TimePoint t) {
  const int64_t ms = ToEpochMillis(t);
  // Floor division: before 1970, -1 ms is 23:59:59.999 of the day before,
  // not 00:00:00.-001 (C++ division rounds toward zero).
  int64_t secs = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    secs -= 1;
  }
  const time_t when = static_cast<time_t>(secs);
  struct tm utc;
  char buf[64];
  if (gmtime_r(&when, &utc) == nullptr || utc.tm_year + 1900 < 0 || utc.tm_year + 1900 > 9999 ||
      std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc) == 0) {
    // Beyond what RFC 3339 can write (years 0000 to 9999); only a corrupt
    // record gets here, and it must still print.
    return ms < 0 ? "0000-01-01T00:00:00.000Z" : "9999-12-31T23:59:59.999Z";
  }
  return absl::StrFormat("%s.%03dZ", buf, millis);
}

std::string FormatTimestampSeconds(TimePoint t) {
  const std::string millis = FormatTimestamp(t);  // "....:SS.mmmZ"
  return millis.substr(0, millis.size() - 5) + "Z";
}

}  // namespace canhazgpu
