// Kubernetes resource quantities ("40Gi", "200M", "1.5", "2000m") as exact
// decimals, with the comparisons and arithmetic of the Kubernetes CEL
// quantity library (apimachinery pkg/api/resource). The one parser of
// quantities: CEL's quantity(), --min-memory, capacities and counters. A value is
// mantissa * 10^exponent; binary suffixes are multiplied out exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu {

class Quantity {
 public:
  Quantity() = default;

  // resource.ParseQuantity: "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
  // with suffixes Ki..Ei, n u m "" k M G T P E, or e/E<exponent>.
  static absl::StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromInt(int64_t value);

  // -1, 0 or 1 by value ("40Gi" equals "42949672960").
  int Compare(const Quantity& other) const;
  int Sign() const;
  // Kubernetes' AsInt64: only for values held in its compact int64 form with
  // a non-negative scale ("1.5", "2000m" and "1.5Gi" are not integers there).
  std::optional<int64_t> AsInt64() const;
  double AsApproximateFloat() const;
  absl::StatusOr<Quantity> Add(const Quantity& other) const;
  absl::StatusOr<Quantity> Sub(const Quantity& other) const;
  // Kubernetes' Value(): rounded up, away from zero, to an integer ("500m"
  // -> 1, "-1.5" -> -2); OutOfRange "does not fit in 64 bits" past int64.
  absl::StatusOr<int64_t> CeilToInt64() const;
  // Plain decimal text ("42949672960", "1.5", "-0.002").
  std::string ToString() const;

 private:
  __int128 mantissa_ = 0;
  int32_t exponent_ = 0;
  // False where Kubernetes would hold the value as an arbitrary-precision
  // decimal (fractional binary suffix, more than 18 digits).
  bool compact_ = true;
};

// A quantity's value as resource.Quantity.Value() gives it, rounded up away
// from zero: "40Gi" -> 42949672960, "1.5k" -> 1500, "500m" -> 1, "1e3" ->
// 1000. InvalidArgument, in one line naming the text, for anything
// Quantity::Parse refuses and for a value beyond int64. For code that
// compares or adds capacities kept as the strings the server sent.
absl::StatusOr<int64_t> QuantityValue(std::string_view text);

}  // namespace canhazgpu
