// `k8shazgpu status [--json] [--node NODE] [--summary]`: every GPU of the
// cluster by node and who holds it - a pod's claim, a local canhazgpu user,
// unreserved use - or free, or tainted (why); clusterview/gpu_status.h.
#include <cstdio>

#include "cli/k8shazgpu/cluster_read.h"
#include "cli/k8shazgpu/commands.h"
#include "clusterview/gpu_status.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

std::vector<FlagSpec> StatusFlags() {
  return {
      {.name = "json", .short_name = 'j', .help = "the status as JSON (also -o json)"},
      {.name = "node", .has_value = true, .value_name = "NODE", .help = "only this node"},
      {.name = "summary", .help = "one line per node"},
  };
}

int StatusCommand(Context& ctx, const Args& args) {
  return RunCommandBody(
      ctx, args, StatusFlags(), "status",
      [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
        if (!flags.positional.empty()) {
          return absl::InvalidArgumentError(
              StrCat("unexpected argument '", flags.positional[0], "' for 'status'"));
        }
        ASSIGN_OR_RETURN(clusterview::View view, ReadCluster(c));
        ASSIGN_OR_RETURN(clusterview::GpuStatusReport report,
                         clusterview::GpuStatus(view, c.clock->Now(),
                                                {.node = flags.Value("node").value_or("")}));
        const bool summary = flags.switches.contains("summary");
        if (PrintDocument(c, flags, clusterview::StatusJson(report, summary))) return 0;
        for (const std::string& problem : report.problems)
          std::fprintf(stderr, "k8shazgpu: warning: %s\n", problem.c_str());
        if (report.rows.empty() && !summary) {
          std::printf("No GPUs in the cluster%s.\n",
                      flags.Has("node") ? StrCat(" on node ", *flags.Value("node")).c_str() : "");
          return 0;
        }
        const clusterview::TextRows rows =
            summary ? clusterview::SummaryRows(report) : clusterview::StatusRows(report);
        PrintTable(c, rows.headers, rows.rows);
        return 0;
      });
}

}  // namespace canhazgpu::cli::k8s
