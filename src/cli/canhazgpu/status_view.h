// Renders `status` as canhazgpu's table or as JSON (canhazgpu's field names
// plus richer fields of our own; see docs/cli.md). Pure functions of the
// collected status and "now", so output is testable byte for byte.
#pragma once

#include <string>

#include "alloc/reservations.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

std::string RenderStatusTable(const alloc::HostStatus& status, TimePoint now, bool color);
nlohmann::ordered_json StatusJson(const alloc::HostStatus& status, TimePoint now);

// "alice", "alice and bob", "alice, bob and 2 more".
std::string FormatUserList(const std::vector<std::string>& users, size_t max_names = 2);

}  // namespace canhazgpu::cli
