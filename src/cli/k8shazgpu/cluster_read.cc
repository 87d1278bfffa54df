#include "cli/k8shazgpu/cluster_read.h"

#include <cstdio>

#include "cli/common/table.h"
#include "cli/common/yaml_output.h"
#include "clusterview/load.h"
#include "core/json_text.h"

namespace canhazgpu::cli::k8s {

absl::StatusOr<clusterview::View> ReadCluster(Context& ctx) {
  if (absl::Status s = ctx.Connect(); !s.ok()) return s;
  absl::StatusOr<clusterview::View> view = clusterview::LoadView(*ctx.client);
  if (!view.ok()) return Explain(view.status(), ctx);
  return view;
}

bool PrintDocument(const Context& ctx, const ParsedFlags& flags,
                   const nlohmann::ordered_json& document) {
  std::string out;
  if (flags.switches.contains("json") || ctx.output == "json") {
    out = DumpJson(document, 2) + "\n";
  } else if (ctx.output == "yaml") {
    out = ToYaml(document);
  } else {
    return false;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return true;
}

void PrintTable(const Context& ctx, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows, size_t fit_width) {
  Table table(headers, MakeStyle(ColorEnabled(ctx.no_color), "1;36"));
  for (const std::vector<std::string>& row : rows) {
    std::vector<Cell> cells;
    for (const std::string& text : row) cells.push_back({text});
    table.AddRow(std::move(cells));
  }
  if (fit_width > 0) table.FitLastColumn(fit_width);
  const std::string out = table.Render();
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace canhazgpu::cli::k8s
