// `report --json`, shared with the dashboard's /api/report.
#pragma once

#include "alloc/report.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli {

nlohmann::ordered_json ReportJson(const alloc::UsageReport& report, int days);

}  // namespace canhazgpu::cli
