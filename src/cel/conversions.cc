// Type conversions (int(), uint(), double(), string(), bytes(), bool(),
// dyn(), type()) and the duration/timestamp constructors.
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "cel/functions.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

Value RangeError(std::string_view what) { return Value::Error(StrCat(what, " out of range")); }

// Go's strconv.ParseInt/ParseUint base 10: optional sign for int, digits only.
bool ParseDecimal(std::string_view s, bool allow_sign, __int128* out) {
  size_t i = 0;
  bool negative = false;
  if (allow_sign && i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return false;
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
    if (v > (__int128{1} << 65)) return false;
  }
  *out = negative ? -v : v;
  return true;
}

Value ToInt(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  switch (x.kind()) {
    case Kind::kInt:
      return x;
    case Kind::kUint:
      if (x.uint_value() > static_cast<uint64_t>(INT64_MAX)) return RangeError("int");
      return Value::Int(static_cast<int64_t>(x.uint_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      // Strictly inside (-2^63, 2^63), as cel-go checks.
      if (std::isnan(d) || d <= -9223372036854775808.0 || d >= 9223372036854775808.0)
        return RangeError("int");
      return Value::Int(static_cast<int64_t>(d));
    }
    case Kind::kString: {
      __int128 v;
      if (!ParseDecimal(x.str(), true, &v) || v > INT64_MAX || v < INT64_MIN) {
        return Value::Error(StrCat("cannot convert '", x.str(), "' to int"));
      }
      return Value::Int(static_cast<int64_t>(v));
    }
    case Kind::kTimestamp:
      return Value::Int(x.timestamp_seconds());
    default:
      return NoOverload("int");
  }
}

Value ToUint(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  switch (x.kind()) {
    case Kind::kUint:
      return x;
    case Kind::kInt:
      if (x.int_value() < 0) return RangeError("uint");
      return Value::Uint(static_cast<uint64_t>(x.int_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      if (std::isnan(d) || d < 0 || d >= 18446744073709551616.0) return RangeError("uint");
      return Value::Uint(static_cast<uint64_t>(d));
    }
    case Kind::kString: {
      __int128 v;
      if (!ParseDecimal(x.str(), false, &v) || v > static_cast<__int128>(UINT64_MAX)) {
        return Value::Error(StrCat("cannot convert '", x.str(), "' to uint"));
      }
      return Value::Uint(static_cast<uint64_t>(v));
    }
    default:
      return NoOverload("uint");
  }
}

Value ToDouble(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  switch (x.kind()) {
    case Kind::kDouble:
      return x;
    case Kind::kInt:
      return Value::Double(static_cast<double>(x.int_value()));
    case Kind::kUint:
      return Value::Double(static_cast<double>(x.uint_value()));
    case Kind::kString: {
      const std::string& s = x.str();
      char* end = nullptr;
      double d = s.empty() || std::isspace(static_cast<unsigned char>(s[0]))
                     ? 0
                     : std::strtod(s.c_str(), &end);
      if (end == nullptr || end != s.c_str() + s.size()) {
        return Value::Error(StrCat("cannot convert '", s, "' to double"));
      }
      return Value::Double(d);
    }
    default:
      return NoOverload("double");
  }
}

// Go's strconv.FormatFloat(d, 'g', -1, 64): shortest digits, exponent form
// below 1e-4 and from 1e21 on.
std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, end);  // "-1.2345e+02"
  size_t e = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string mantissa = sci.substr(0, e);
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  // Built by appending only: GCC 12 at -O3 reports a false -Wrestrict
  // overlap inside libstdc++ for `"." + digits.substr(1)` (an insert at the
  // front of a temporary).
  std::string out;
  if (negative) out.push_back('-');
  if (exponent < -4 || exponent >= 21) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.append(absl::StrFormat("e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent)));
  } else if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
  } else if (static_cast<int>(digits.size()) <= exponent + 1) {
    out.append(digits);
    out.append(exponent + 1 - digits.size(), '0');
  } else {
    out.append(digits, 0, exponent + 1);
    out.push_back('.');
    out.append(digits, exponent + 1, std::string::npos);
  }
  return out;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  *y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  if (*m <= 2) ++*y;
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::string FormatFraction(int64_t nanos) {
  if (nanos == 0) return "";
  std::string s = absl::StrFormat("%09d", nanos);
  while (s.back() == '0') s.pop_back();
  return "." + s;
}

std::string FormatTimestamp(const Value& t) {
  int64_t secs = t.timestamp_seconds();
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d%sZ", y, m, d, rem / 3600, rem / 60 % 60,
                         rem % 60, FormatFraction(t.timestamp_nanos()));
}

std::string FormatDuration(int64_t nanos) {
  bool negative = nanos < 0;
  uint64_t abs = negative ? 0 - static_cast<uint64_t>(nanos) : nanos;
  return StrCat(negative ? "-" : "", abs / kNanosPerSecond,
                FormatFraction(static_cast<int64_t>(abs % kNanosPerSecond)), "s");
}

Value ToString(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  switch (x.kind()) {
    case Kind::kString:
      return x;
    case Kind::kBool:
      return Value::String(x.bool_value() ? "true" : "false");
    case Kind::kInt:
      return Value::String(StrCat(x.int_value()));
    case Kind::kUint:
      return Value::String(StrCat(x.uint_value()));
    case Kind::kDouble:
      return Value::String(FormatDouble(x.double_value()));
    case Kind::kBytes:
      if (!IsValidUtf8(x.str()))
        return Value::Error("invalid UTF-8 in bytes, cannot convert to string");
      return Value::String(x.str());
    case Kind::kTimestamp:
      return Value::String(FormatTimestamp(x));
    case Kind::kDuration:
      return Value::String(FormatDuration(x.duration_nanos()));
    default:
      return NoOverload("string");
  }
}

}  // namespace

Value ConvertToString(const Value& v) {
  const Value* args[] = {&v};
  EvalContext unused;
  return ToString(args, 1, unused);
}

namespace {

Value ToBytes(const Value* const* a, size_t, EvalContext&) { return Value::Bytes((*a[0]).str()); }

Value ToBool(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  if (x.kind() == Kind::kBool) return x;
  static constexpr std::string_view kTrue[] = {"1", "t", "T", "true", "TRUE", "True"};
  static constexpr std::string_view kFalse[] = {"0", "f", "F", "false", "FALSE", "False"};
  for (std::string_view t : kTrue) {
    if (x.str() == t) return Value::Bool(true);
  }
  for (std::string_view f : kFalse) {
    if (x.str() == f) return Value::Bool(false);
  }
  return Value::Error(StrCat("type conversion error: cannot convert '", x.str(), "' to bool"));
}

Value Identity(const Value* const* a, size_t, EvalContext&) { return (*a[0]); }

Value TypeOf(const Value* const* a, size_t, EvalContext&) {
  return Value::Type((*a[0]).TypeName());
}

// Go's time.ParseDuration: "1h2m3.5s", "-1.5h", "300ms", units ns us µs ms s m h.
Value ParseDuration(const Value* const* a, size_t, EvalContext&) {
  if ((*a[0]).kind() == Kind::kDuration) return (*a[0]);
  std::string_view s = (*a[0]).str();
  std::string_view original = s;
  auto bad = [&] { return Value::Error(StrCat("invalid duration '", original, "'")); };
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) negative = s[0] == '-', s.remove_prefix(1);
  if (s == "0") return Value::Duration(0);
  if (s.empty()) return bad();
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == 0) return bad();
    std::string number(s.substr(0, i));
    s.remove_prefix(i);
    size_t u = 0;
    while (u < s.size() && !std::isdigit(static_cast<unsigned char>(s[u])) && s[u] != '.') ++u;
    std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    long double scale;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else
      return bad();
    char* end = nullptr;
    long double v = std::strtold(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return bad();
    total += v * scale;
  }
  if (total > 9.223372036854775807e18L) return RangeError("duration");
  int64_t nanos = static_cast<int64_t>(std::llround(static_cast<double>(total)));
  return Value::Duration(negative ? -nanos : nanos);
}

Value ParseTimestamp(const Value* const* a, size_t, EvalContext&) {
  const Value& x = (*a[0]);
  if (x.kind() == Kind::kTimestamp) return x;
  if (x.kind() == Kind::kInt) {
    if (x.int_value() < kMinTimestampSeconds || x.int_value() > kMaxTimestampSeconds)
      return RangeError("timestamp");
    return Value::Timestamp(x.int_value(), 0);
  }
  std::string_view s = x.str();
  auto bad = [&] { return Value::Error(StrCat("invalid timestamp '", s, "'")); };
  auto num = [&](size_t pos, size_t len, int* out) {
    if (pos + len > s.size()) return false;
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !num(0, 4, &year) || s[4] != '-' || !num(5, 2, &month) || s[7] != '-' ||
      !num(8, 2, &day) || (s[10] != 'T' && s[10] != 't') || !num(11, 2, &hour) || s[13] != ':' ||
      !num(14, 2, &minute) || s[16] != ':' || !num(17, 2, &second)) {
    return bad();
  }
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    size_t start = ++pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos == start || pos - start > 9) return bad();
    std::string frac(s.substr(start, pos - start));
    frac.append(9 - frac.size(), '0');
    nanos = std::atoll(frac.c_str());
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!num(pos + 1, 2, &oh) || s.size() <= pos + 3 || s[pos + 3] != ':' || !num(pos + 4, 2, &om))
      return bad();
    offset = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size() || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60) {
    return bad();
  }
  int64_t secs =
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
  if (secs < kMinTimestampSeconds || secs > kMaxTimestampSeconds) return RangeError("timestamp");
  return Value::Timestamp(secs, static_cast<int32_t>(nanos));
}

}  // namespace

void RegisterConversions(FunctionRegistry& r) {
  for (std::string_view t : {"int", "uint", "double", "string", "Timestamp"}) {
    r.Add(StrCat("int(", t, ") -> int"), ToInt);
  }
  for (std::string_view t : {"int", "uint", "double", "string"}) {
    r.Add(StrCat("uint(", t, ") -> uint"), ToUint);
    r.Add(StrCat("double(", t, ") -> double"), ToDouble);
  }
  for (std::string_view t :
       {"string", "bool", "int", "uint", "double", "bytes", "Timestamp", "Duration"}) {
    r.Add(StrCat("string(", t, ") -> string"), ToString);
  }
  r.Add("bytes(bytes) -> bytes", ToBytes);
  r.Add("bytes(string) -> bytes", ToBytes);
  r.Add("bool(bool) -> bool", ToBool);
  r.Add("bool(string) -> bool", ToBool);
  r.Add("dyn(A) -> dyn", Identity);
  r.Add("type(A) -> type(A)", TypeOf);
  r.Add("duration(string) -> Duration", ParseDuration);
  r.Add("duration(Duration) -> Duration", ParseDuration);
  r.Add("timestamp(string) -> Timestamp", ParseTimestamp);
  r.Add("timestamp(int) -> Timestamp", ParseTimestamp);
  r.Add("timestamp(Timestamp) -> Timestamp", ParseTimestamp);
}

}  // namespace canhazgpu::cel
