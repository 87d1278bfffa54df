// Timestamp and duration accessors of standard CEL, as cel-go implements
// them (common/types/timestamp.go, duration.go): getFullYear, getMonth
// (0-based), getDate (1-based day of the month), getDayOfMonth (0-based),
// getDayOfWeek (0 = Sunday), getDayOfYear (0-based), getHours, getMinutes,
// getSeconds, getMilliseconds. A timestamp is read in UTC, or in the time
// zone given as an IANA name ("America/Los_Angeles", from the system's
// tz database) or a fixed offset ("+05:30", "-08:00"). Durations give
// their whole length in that unit, truncated toward zero.
#include "absl/time/time.h"

#include <cstdlib>

#include "absl/time/civil_time.h"
#include "cel/functions.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

// Go's strconv.Atoi: optional sign, decimal digits only.
bool ParseGoInt(std::string_view s, int64_t* out) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size() || s.size() > 12) return false;
  int64_t v = 0;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return false;
    v = v * 10 + (s[j] - '0');
  }
  *out = s[0] == '-' ? -v : v;
  return true;
}

// cel-go's timeZone(): a name without ':' is loaded as Go's
// time.LoadLocation would ("" and "UTC" are UTC), anything else is
// HOURS:MINUTES east of UTC, the minutes taking the sign of the text.
bool LoadZone(const std::string& name, absl::TimeZone* zone, std::string* error) {
  size_t colon = name.find(':');
  if (colon == std::string::npos) {
    if (name.empty() || name == "UTC") {
      *zone = absl::UTCTimeZone();
      return true;
    }
    if (name == "Local") {
      *zone = absl::LocalTimeZone();
      return true;
    }
    // As Go: no absolute paths or parent directories out of the database.
    if (name[0] == '/' || name[0] == '\\' || name.find("..") != std::string::npos) {
      *error = "time: invalid location name";
      return false;
    }
    if (!absl::LoadTimeZone(name, zone)) {
      *error = StrCat("unknown time zone ", name);
      return false;
    }
    return true;
  }
  int64_t hours, minutes;
  std::string_view text(name);
  if (!ParseGoInt(text.substr(0, colon), &hours)) {
    *error = StrCat("strconv.Atoi: parsing \"", name.substr(0, colon), "\": invalid syntax");
    return false;
  }
  if (!ParseGoInt(text.substr(colon + 1), &minutes)) {
    *error = StrCat("strconv.Atoi: parsing \"", name.substr(colon + 1), "\": invalid syntax");
    return false;
  }
  const int64_t offset = name[0] == '-' ? hours * 60 - minutes : hours * 60 + minutes;
  // Go keeps any offset; a civil time stays in range beyond ±1 year.
  if (std::llabs(offset) > 366 * 24 * 60) {
    *error = StrCat("time zone offset out of range: ", name);
    return false;
  }
  *zone = absl::FixedTimeZone(static_cast<int>(offset * 60));
  return true;
}

enum class Field {
  kFullYear,
  kMonth,
  kDate,
  kDayOfMonth,
  kDayOfWeek,
  kDayOfYear,
  kHours,
  kMinutes,
  kSeconds,
  kMilliseconds
};

// Go's time.Weekday: Sunday is 0.
int64_t GoWeekday(absl::Weekday day) {
  switch (day) {
    case absl::Weekday::sunday:
      return 0;
    case absl::Weekday::monday:
      return 1;
    case absl::Weekday::tuesday:
      return 2;
    case absl::Weekday::wednesday:
      return 3;
    case absl::Weekday::thursday:
      return 4;
    case absl::Weekday::friday:
      return 5;
    case absl::Weekday::saturday:
      return 6;
  }
  return 0;
}

template <Field F>
Value TimestampField(const Value* const* a, size_t n, EvalContext&) {
  absl::TimeZone zone = absl::UTCTimeZone();
  if (n == 2) {
    std::string error;
    if (!LoadZone((*a[1]).str(), &zone, &error)) return Value::Error(std::move(error));
  }
  const Value& t = *a[0];
  const absl::Time time =
      absl::FromUnixSeconds(t.timestamp_seconds()) + absl::Nanoseconds(t.timestamp_nanos());
  const absl::TimeZone::CivilInfo info = zone.At(time);
  const absl::CivilSecond& cs = info.cs;
  switch (F) {
    case Field::kFullYear:
      return Value::Int(cs.year());
    case Field::kMonth:
      return Value::Int(cs.month() - 1);
    case Field::kDate:
      return Value::Int(cs.day());
    case Field::kDayOfMonth:
      return Value::Int(cs.day() - 1);
    case Field::kDayOfWeek:
      return Value::Int(GoWeekday(absl::GetWeekday(cs)));
    case Field::kDayOfYear:
      return Value::Int(absl::GetYearDay(cs) - 1);
    case Field::kHours:
      return Value::Int(cs.hour());
    case Field::kMinutes:
      return Value::Int(cs.minute());
    case Field::kSeconds:
      return Value::Int(cs.second());
    case Field::kMilliseconds:
      return Value::Int(absl::ToInt64Milliseconds(info.subsecond));
  }
  return Value::Error("unknown timestamp field");
}

template <int64_t kUnitNanos>
Value DurationIn(const Value* const* a, size_t, EvalContext&) {
  return Value::Int((*a[0]).duration_nanos() / kUnitNanos);
}

template <Field F>
void AddTimestampAccessor(FunctionRegistry& r, std::string_view name) {
  r.Add(StrCat("<Timestamp>.", name, "() -> int"), TimestampField<F>);
  r.Add(StrCat("<Timestamp>.", name, "(string) -> int"), TimestampField<F>);
}

}  // namespace

void RegisterTime(FunctionRegistry& r) {
  AddTimestampAccessor<Field::kFullYear>(r, "getFullYear");
  AddTimestampAccessor<Field::kMonth>(r, "getMonth");
  AddTimestampAccessor<Field::kDate>(r, "getDate");
  AddTimestampAccessor<Field::kDayOfMonth>(r, "getDayOfMonth");
  AddTimestampAccessor<Field::kDayOfWeek>(r, "getDayOfWeek");
  AddTimestampAccessor<Field::kDayOfYear>(r, "getDayOfYear");
  AddTimestampAccessor<Field::kHours>(r, "getHours");
  AddTimestampAccessor<Field::kMinutes>(r, "getMinutes");
  AddTimestampAccessor<Field::kSeconds>(r, "getSeconds");
  AddTimestampAccessor<Field::kMilliseconds>(r, "getMilliseconds");
  r.Add("<Duration>.getHours() -> int", DurationIn<3600 * kNanosPerSecond>);
  r.Add("<Duration>.getMinutes() -> int", DurationIn<60 * kNanosPerSecond>);
  r.Add("<Duration>.getSeconds() -> int", DurationIn<kNanosPerSecond>);
  r.Add("<Duration>.getMilliseconds() -> int", DurationIn<1'000'000>);
}

}  // namespace canhazgpu::cel
