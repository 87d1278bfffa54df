// What status, queue and explain share: the cluster read once as a
// clusterview::View, and their output in the form -o/--json asks for.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "cli/k8shazgpu/context.h"
#include "clusterview/view.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Connects and reads the whole cluster; errors reworded by Explain().
absl::StatusOr<clusterview::View> ReadCluster(Context& ctx);

// Prints `document` as JSON (--json or -o json) or YAML (-o yaml) and
// returns true, or returns false when the table is wanted.
bool PrintDocument(const Context& ctx, const ParsedFlags& flags,
                   const nlohmann::ordered_json& document);

// Prints headers and rows as a table on stdout (cli::Table, coloured
// headers on a terminal). With `fit_width`, the last column is cut so that
// each line fits in that many columns (Table::FitLastColumn).
void PrintTable(const Context& ctx, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows, size_t fit_width = 0);

}  // namespace canhazgpu::cli::k8s
