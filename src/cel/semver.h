// Semantic versions as the Kubernetes CEL semver library parses and orders
// them (blang/semver v4): strict MAJOR.MINOR.PATCH[-pre][+build], or the
// normalizing form that strips a leading "v", leading zeros and pads "1.2".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::cel {

struct Semver {
  uint64_t major = 0, minor = 0, patch = 0;
  std::vector<std::string> pre;  // pre-release identifiers
  std::vector<std::string> build;

  static absl::StatusOr<Semver> Parse(std::string_view text, bool normalize = false);
  // Semver 2.0 precedence; build metadata ignored. -1, 0 or 1.
  int Compare(const Semver& other) const;
  std::string ToString() const;
};

}  // namespace canhazgpu::cel
