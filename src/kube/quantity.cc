#include "kube/quantity.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace canhazgpu::kube {
namespace {

// Significant digits kept exactly: any 19-digit number times 2^60 fits in
// 128 bits, so the arithmetic below never overflows before it is checked.
constexpr size_t kMaxDigits = 19;
constexpr __int128 kMax = INT64_MAX;

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError("invalid quantity \"" + std::string(text) +
                                    "\": " + std::string(why));
}

// The number part: its significant digits as an integer and the power of
// ten they are scaled by ("12.50" -> 125, -1).
struct Decimal {
  bool negative = false;
  std::string digits;
  int exponent = 0;
};

// Reads [+-]digits[.digits] from the front of `text`; nullopt if no digit.
std::optional<Decimal> ReadDecimal(std::string_view& text) {
  Decimal out;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    out.negative = text[0] == '-';
    text.remove_prefix(1);
  }
  bool any = false;
  bool fraction = false;
  while (!text.empty()) {
    const char c = text[0];
    if (c == '.' && !fraction) {
      fraction = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      any = true;
      out.digits += c;
      out.exponent -= fraction ? 1 : 0;
    } else {
      break;
    }
    text.remove_prefix(1);
  }
  if (!any) {
    return std::nullopt;
  }
  // Leading zeros carry nothing; trailing ones move into the exponent, so
  // "100000000000000000000" is one digit, not 21.
  const size_t first = out.digits.find_first_not_of('0');
  out.digits = first == std::string::npos ? "" : out.digits.substr(first);
  while (!out.digits.empty() && out.digits.back() == '0') {
    out.digits.pop_back();
    ++out.exponent;
  }
  return out;
}

// Digits only, at most kMaxDigits of them: no overflow.
__int128 ValueOf(std::string_view digits) {
  __int128 out = 0;
  for (char c : digits) {
    out = out * 10 + (c - '0');
  }
  return out;
}

__int128 PowerOfTen(int n) {
  __int128 out = 1;
  for (int i = 0; i < n; ++i) {
    out *= 10;
  }
  return out;
}

// The multiplier a suffix stands for, as 2^binary * 10^decimal.
struct Scale {
  int binary = 0;
  int decimal = 0;
};

absl::StatusOr<Scale> ReadSuffix(std::string_view whole, std::string_view suffix) {
  static constexpr std::array<std::pair<std::string_view, Scale>, 14> kSuffixes = {{
      {"", {0, 0}},
      {"m", {0, -3}},
      {"k", {0, 3}},
      {"M", {0, 6}},
      {"G", {0, 9}},
      {"T", {0, 12}},
      {"P", {0, 15}},
      {"E", {0, 18}},
      {"Ki", {10, 0}},
      {"Mi", {20, 0}},
      {"Gi", {30, 0}},
      {"Ti", {40, 0}},
      {"Pi", {50, 0}},
      {"Ei", {60, 0}},
  }};
  for (const auto& [name, scale] : kSuffixes) {
    if (suffix == name) {
      return scale;
    }
  }
  // A decimal exponent: "e" or "E" and a signed integer ("E" alone is exa).
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view rest = suffix.substr(1);
    std::optional<Decimal> exponent = ReadDecimal(rest);
    const bool integer = rest.empty() && suffix.find('.') == std::string_view::npos;
    if (exponent && integer && exponent->digits.size() + exponent->exponent <= 4) {
      const int value =
          static_cast<int>(ValueOf(exponent->digits) * PowerOfTen(exponent->exponent));
      return Scale{0, exponent->negative ? -value : value};
    }
  }
  return Invalid(whole, "unknown suffix \"" + std::string(suffix) + "\"");
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantity(std::string_view text) {
  std::string_view rest = text;
  std::optional<Decimal> number = ReadDecimal(rest);
  if (!number) {
    return Invalid(text, "expected a number");
  }
  auto scale = ReadSuffix(text, rest);
  if (!scale.ok()) {
    return scale.status();
  }
  if (number->digits.empty()) {
    return 0;
  }
  if (number->digits.size() > kMaxDigits) {
    return Invalid(text, "more than 19 significant digits");
  }
  auto too_large = [text] { return Invalid(text, "does not fit in 64 bits"); };
  __int128 value = ValueOf(number->digits);
  const int power = number->exponent + scale->decimal;
  if (power > static_cast<int>(kMaxDigits)) {
    return too_large();
  }
  if (power >= 0) {
    value *= PowerOfTen(power);
    if (value > kMax) {
      return too_large();
    }
  }
  value <<= scale->binary;
  if (power < 0) {
    // Past 38 decimal places the quotient is below one (the numerator is
    // under 2^124, below 10^38), and rounds up to one.
    const __int128 divisor = PowerOfTen(std::min(-power, 38));
    value = -power > 38 ? 1 : (value + divisor - 1) / divisor;
  }
  if (value > kMax) {
    return too_large();
  }
  return number->negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
}

}  // namespace canhazgpu::kube
