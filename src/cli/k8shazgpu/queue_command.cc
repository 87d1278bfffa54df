// `k8shazgpu queue [--json]`: the pods waiting for devices - our runs and
// any other pod with DRA claims - in creation order, with what they ask for
// and why they wait (clusterview/queue.h).
#include <cstdio>

#include "cli/k8shazgpu/cluster_read.h"
#include "cli/k8shazgpu/commands.h"
#include "clusterview/queue.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

std::vector<FlagSpec> QueueFlags() {
  return {{.name = "json", .short_name = 'j', .help = "the queue as JSON (also -o json)"}};
}

int QueueCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, QueueFlags(), "queue",
                        [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
                          if (!flags.positional.empty()) {
                            return absl::InvalidArgumentError(StrCat(
                                "unexpected argument '", flags.positional[0], "' for 'queue'"));
                          }
                          ASSIGN_OR_RETURN(clusterview::View view, ReadCluster(c));
                          const std::vector<clusterview::QueueEntry> queue =
                              clusterview::PendingQueue(view, c.clock->Now());
                          if (PrintDocument(c, flags, clusterview::QueueJson(queue))) return 0;
                          if (queue.empty()) {
                            std::printf("No pod is waiting for devices.\n");
                            return 0;
                          }
                          std::vector<std::vector<std::string>> rows =
                              clusterview::QueueRows(queue);
                          const std::vector<std::string> headers = rows.front();
                          rows.erase(rows.begin());
                          PrintTable(c, headers, rows);
                          return 0;
                        });
}

}  // namespace canhazgpu::cli::k8s
