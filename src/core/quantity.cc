#include "core/quantity.h"

#include <cmath>
#include <limits>

#include "core/strings.h"

namespace canhazgpu {
namespace {

using int128 = __int128;

constexpr int kMaxDigits = 36;  // keeps every aligned product inside 128 bits

// Powers of ten up to kMaxDigits and, for each, the largest magnitude that
// can be multiplied by it: tables, so that comparing two quantities needs
// neither a loop nor a 128-bit division.
struct PowerTable {
  int128 pow10[kMaxDigits + 1];
  int128 limit[kMaxDigits + 1];
};

constexpr PowerTable MakePowerTable() {
  PowerTable t{};
  int128 p = 1;
  for (int n = 0; n <= kMaxDigits; ++n) {
    t.pow10[n] = p;
    t.limit[n] = std::numeric_limits<int128>::max() / p;
    p *= 10;
  }
  return t;
}

constexpr PowerTable kPowers = MakePowerTable();

int128 Pow10(int n) { return kPowers.pow10[n]; }

absl::Status BadQuantity(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("invalid quantity '", text, "': ", why));
}

// Brings both to the smaller exponent; false when that would overflow.
bool Align(int128 a, int ea, int128 b, int eb, int128* out_a, int128* out_b, int* out_e) {
  int e = std::min(ea, eb);
  int shift_a = ea - e, shift_b = eb - e;
  if (shift_a > kMaxDigits || shift_b > kMaxDigits) return false;
  int128 limit = kPowers.limit[std::max(shift_a, shift_b)];
  if (a > limit || a < -limit || b > limit || b < -limit) return false;
  *out_a = a * Pow10(shift_a);
  *out_b = b * Pow10(shift_b);
  *out_e = e;
  return true;
}

// The suffix after the number: a decimal one (n u m k M G T P E) or
// exponent (e3, E-2) adds to `exponent`; a binary one (Ki..Ei) sets
// `binary_power`. False for anything else.
bool ReadQuantitySuffix(std::string_view suffix, int* exponent, int* binary_power) {
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (auto [name, power] : kDecimal) {
    if (suffix == name) {
      *exponent += power;
      return true;
    }
  }
  for (auto [name, power] : kBinary) {
    if (suffix == name) {
      *binary_power = power;
      return true;
    }
  }
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return false;
  size_t i = 1;
  bool negative = false;
  if (suffix[i] == '+' || suffix[i] == '-') negative = suffix[i++] == '-';
  if (i >= suffix.size()) return false;
  int value = 0;
  for (; i < suffix.size(); ++i) {
    if (suffix[i] < '0' || suffix[i] > '9' || value > 1000) return false;
    value = value * 10 + (suffix[i] - '0');
  }
  *exponent += negative ? -value : value;
  return true;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    negative = text[pos] == '-';
    ++pos;
  }
  int128 mantissa = 0;
  int digits = 0, fraction_digits = 0;
  bool seen_point = false, seen_digit = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_point) return BadQuantity(text, "more than one decimal point");
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    seen_digit = true;
    if (mantissa == 0 && c == '0') {
      if (seen_point) ++fraction_digits;
      continue;
    }
    if (++digits > kMaxDigits) return BadQuantity(text, "too many digits");
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  if (!seen_digit) {
    return BadQuantity(text,
                       "quantities must match the regular expression "
                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  }
  int exponent = -fraction_digits;
  int binary_power = 0;
  if (!ReadQuantitySuffix(text.substr(pos), &exponent, &binary_power)) {
    return BadQuantity(text, "unable to parse quantity's suffix");
  }
  Quantity q;
  q.compact_ = digits <= 18 && !(binary_power > 0 && fraction_digits > 0);
  if (binary_power > 0) {
    int128 factor = int128{1} << binary_power;
    if (mantissa > std::numeric_limits<int128>::max() / factor) {
      return BadQuantity(text, "value too large");
    }
    mantissa *= factor;
  }
  // Kubernetes rounds non-zero values below 1n up to 1n.
  if (exponent < -9 && mantissa != 0) {
    int drop = -9 - exponent;
    int128 divisor = drop > kMaxDigits ? 0 : Pow10(drop);
    int128 rounded = divisor == 0 ? 1 : (mantissa + divisor - 1) / divisor;
    mantissa = rounded;
    exponent = -9;
  }
  if (exponent > 1000) return BadQuantity(text, "value too large");
  q.mantissa_ = negative ? -mantissa : mantissa;
  q.exponent_ = exponent;
  return q;
}

absl::StatusOr<int64_t> Quantity::CeilToInt64() const {
  const auto too_large = [this] {
    return absl::OutOfRangeError(StrCat("quantity ", ToString(), " does not fit in 64 bits"));
  };
  int128 value = mantissa_;
  if (exponent_ > 0) {
    if (exponent_ > kMaxDigits || value > kPowers.limit[exponent_] ||
        value < -kPowers.limit[exponent_]) {
      return too_large();
    }
    value *= Pow10(exponent_);
  } else if (exponent_ < 0) {
    // |mantissa| < 10^39, so past that many places the value is a fraction.
    const int128 divisor = -exponent_ > kMaxDigits ? 0 : Pow10(-exponent_);
    if (divisor == 0) {
      value = Sign();
    } else {
      const int128 whole = value / divisor;
      value = whole + (whole * divisor != value ? Sign() : 0);
    }
  }
  if (value > std::numeric_limits<int64_t>::max() || value < std::numeric_limits<int64_t>::min()) {
    return too_large();
  }
  return static_cast<int64_t>(value);
}

absl::StatusOr<int64_t> QuantityValue(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return q.status();
  absl::StatusOr<int64_t> value = q->CeilToInt64();
  if (!value.ok()) return BadQuantity(text, "does not fit in 64 bits");
  return value;
}

Quantity Quantity::FromInt(int64_t value) {
  Quantity q;
  q.mantissa_ = value;
  return q;
}

int Quantity::Compare(const Quantity& other) const {
  if (exponent_ == other.exponent_) {  // the usual case: both whole numbers of bytes
    return mantissa_ < other.mantissa_ ? -1 : (mantissa_ > other.mantissa_ ? 1 : 0);
  }
  int128 a, b;
  int e;
  if (Align(mantissa_, exponent_, other.mantissa_, other.exponent_, &a, &b, &e)) {
    return a < b ? -1 : (a > b ? 1 : 0);
  }
  // Exponents far apart: the sign and magnitude decide without precision.
  if (Sign() != other.Sign()) return Sign() < other.Sign() ? -1 : 1;
  double x = AsApproximateFloat(), y = other.AsApproximateFloat();
  return x < y ? -1 : (x > y ? 1 : 0);
}

int Quantity::Sign() const { return mantissa_ < 0 ? -1 : (mantissa_ > 0 ? 1 : 0); }

std::optional<int64_t> Quantity::AsInt64() const {
  if (!compact_ || exponent_ < 0) return std::nullopt;
  if (exponent_ > 18) return mantissa_ == 0 ? std::optional<int64_t>(0) : std::nullopt;
  int128 value = mantissa_ * Pow10(exponent_);
  if (value > std::numeric_limits<int64_t>::max() || value < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

double Quantity::AsApproximateFloat() const {
  return static_cast<double>(mantissa_) * std::pow(10.0, exponent_);
}

absl::StatusOr<Quantity> Quantity::Add(const Quantity& other) const {
  int128 a, b;
  int e;
  if (!Align(mantissa_, exponent_, other.mantissa_, other.exponent_, &a, &b, &e)) {
    return absl::OutOfRangeError("quantity arithmetic out of range");
  }
  Quantity q;
  q.mantissa_ = a + b;
  q.exponent_ = e;
  q.compact_ = compact_ && other.compact_;
  return q;
}

absl::StatusOr<Quantity> Quantity::Sub(const Quantity& other) const {
  Quantity negated = other;
  negated.mantissa_ = -other.mantissa_;
  return Add(negated);
}

std::string Quantity::ToString() const {
  int128 m = mantissa_ < 0 ? -mantissa_ : mantissa_;
  std::string reversed;
  do {
    reversed.push_back(static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m != 0);
  std::string digits(reversed.rbegin(), reversed.rend());
  std::string out = mantissa_ < 0 ? "-" : "";
  if (exponent_ >= 0) {
    out += digits;
    if (digits != "0") out += std::string(static_cast<size_t>(exponent_), '0');
    return out;
  }
  size_t frac = static_cast<size_t>(-exponent_);
  std::string padded =
      digits.size() <= frac ? std::string(frac - digits.size() + 1, '0') + digits : digits;
  std::string whole = padded.substr(0, padded.size() - frac);
  std::string fraction = padded.substr(padded.size() - frac);
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  out += whole;
  if (!fraction.empty()) out += "." + fraction;
  return out;
}

}  // namespace canhazgpu
