// Parsing and formatting of the human durations used by --duration,
// --timeout and --wait ("30s", "2h", "0.5h", "1h30m"), and of elapsed times in
// canhazgpu's "<H>h <M>m <S>s" style. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/clock.h"

namespace canhazgpu {

// Parses one or more "<number><unit>" parts, unit one of s, m, h, d, e.g.
// "30m", "0.5h", "1d", "1h30m". The total must be positive and at most
// ten years. Bare numbers, negative values and unknown units are
// InvalidArgument errors whose message names the input.
absl::StatusOr<Duration> ParseDuration(std::string_view text);

// "49h 0m 0s", "0h 5m 30s": canhazgpu's format, hours unbounded, rounded down
// to whole seconds. Negative durations format as "0h 0m 0s".
std::string FormatDuration(Duration d);

// Compact form for tables: "45s", "5m 30s", "2h 5m", "3d 4h".
std::string FormatDurationShort(Duration d);

// RFC 3339 in UTC with millisecond precision: "2026-11-21T14:02:03.120Z".
// Times before 1970 print correctly (the millisecond field is never
// negative); times outside years 0000 to 9999 are clamped to those ends.
std::string FormatTimestamp(TimePoint t);

// RFC 3339 in UTC to the whole second, "2026-11-21T14:02:03Z": Kubernetes'
// metav1.Time. Same clamping as FormatTimestamp.
std::string FormatTimestampSeconds(TimePoint t);

}  // namespace canhazgpu
