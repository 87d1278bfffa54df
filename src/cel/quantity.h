// Kubernetes resource quantities ("40Gi", "200M", "1.5", "2000m") as exact
// decimals, with the comparisons and arithmetic of the Kubernetes CEL
// quantity library (apimachinery pkg/api/resource). A value is
// mantissa * 10^exponent; binary suffixes are multiplied out exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::cel {

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
  // Plain decimal text ("42949672960", "1.5", "-0.002").
  std::string ToString() const;

 private:
  __int128 mantissa_ = 0;
  int32_t exponent_ = 0;
  // False where Kubernetes would hold the value as an arbitrary-precision
  // decimal (fractional binary suffix, more than 18 digits).
  bool compact_ = true;
};

}  // namespace canhazgpu::cel
