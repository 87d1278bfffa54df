// The `device` variable of a DRA selector, built as Kubernetes builds it
// (dynamic-resource-allocation cel/compile.go): qualified attribute and
// capacity names split at the first '/', names without a domain put in the
// driver's domain, and the outer maps answering an unknown domain with an
// empty map.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cel/value.h"

namespace canhazgpu::cel {

// `attributes`: qualified name -> int, bool, string or Semver value;
// `capacity`: qualified name -> Quantity value.
Value MakeDraDevice(std::string_view driver,
                    const std::vector<std::pair<std::string, Value>>& attributes,
                    const std::vector<std::pair<std::string, Value>>& capacity);

}  // namespace canhazgpu::cel
