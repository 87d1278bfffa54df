// `report` as text (the table people read) and as JSON (`report --json`,
// shared with the dashboard's /api/report). Pure functions of the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alloc/report.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

nlohmann::ordered_json ReportJson(const alloc::UsageReport& report, int days);

// The table: per user GPU-hours (RUN, MANUAL, K8S), busy/idle/unknown
// shares, reservations, longest; then a TOTAL row and a summary line. Every
// row's parts add up to its total as printed, and the TOTAL row is the sum
// of the rows above it as printed.
std::string ReportText(const alloc::UsageReport& report, int days, bool color);

// `values` rounded to whole numbers whose sum is their sum rounded
// (largest remainder: the ones rounded down the most go up first), so
// that printed parts add up to their printed total. Ties go to the
// earlier value; negative values count as 0.
std::vector<int64_t> RoundKeepingSum(const std::vector<double>& values);

}  // namespace canhazgpu::cli
