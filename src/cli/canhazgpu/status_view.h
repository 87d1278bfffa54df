// Renders `status` as canhazgpu's table or as JSON (canhazgpu's field names
// plus richer fields of our own; see docs/cli.md). Pure functions of the
// collected status and "now", so output is testable byte for byte.
#pragma once

#include <string>

#include "alloc/queue.h"
#include "alloc/reservations.h"
#include "cli/common/table.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

struct StatusTableOptions {
  bool color = false;
  size_t width = 0;  // terminal columns; 0: as wide as the content
};

// The table from `status --json` objects (local or from a remote host), so
// every host renders alike. Columns with nothing to show are left out; when
// `width` is set, the least useful columns are dropped until it fits.
std::string RenderStatusTable(const nlohmann::ordered_json& gpus,
                              const StatusTableOptions& options);
std::string RenderStatusTable(const alloc::HostStatus& status, TimePoint now, bool color);

// "███░░░░░ 30.0/80G", coloured green, yellow, red at 40% and 70%.
Cell MemoryBar(int64_t used_mib, int64_t total_mib, bool color);
nlohmann::ordered_json StatusJson(const alloc::HostStatus& status, TimePoint now);

// `queue --json`: the waiting requests, head first, with totals.
nlohmann::ordered_json QueueJson(const std::vector<alloc::QueueRow>& rows, TimePoint now);

// "actual (display)" when the holder gave another name with --user, as the
// Go tool showed it; else the account alone.
std::string UserWithDisplayName(const std::string& user, const std::string& display);

// "alice", "alice and bob", "alice, bob and 2 more".
std::string FormatUserList(const std::vector<std::string>& users, size_t max_names = 2);

}  // namespace canhazgpu::cli
