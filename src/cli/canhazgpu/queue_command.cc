// canhazgpu queue [--json]: the requests waiting for GPUs, head first.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "alloc/queue.h"
#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/status_view.h"
#include "cli/common/table.h"
#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/json_text.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kQueueFlags = {
    {.name = "json", .short_name = 'j', .help = "JSON output"},
};

std::string Requested(const QueueEntry& e) {
  // --gpu-mem: "10Gi of 1 GPU(s)", a share on each.
  std::string share = e.memory > 0 ? StrCat(store::FormatBytes(e.memory), " of ") : "";
  if (!e.ids.empty()) return StrCat(share, "ids ", JoinGpuIds(e.ids));
  return StrCat(share, e.count, " GPU(s)", e.selector.empty() ? "" : " ", e.selector);
}

Duration Waited(const QueueEntry& e, TimePoint now) {
  return std::chrono::duration_cast<Duration>(now - e.enqueued);
}

// The Go tool's names and shapes (its QueueEntry and totals) beside ours,
// so scripts written for it keep working. `user` stays the account, as in
// `status --json`; the Go tool's `user` was the --user display name, which
// is `display_user` here.
nlohmann::ordered_json WithGoToolFields(nlohmann::ordered_json json,
                                        const std::vector<alloc::QueueRow>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const QueueEntry& e = rows[i].entry;
    nlohmann::ordered_json& j = json["entries"][i];
    j["actual_user"] = e.user;
    if (!e.display_user.empty()) j["display_user"] = e.display_user;
    j["requested_count"] = e.count;
    j["allocated_gpus"] = rows[i].held;
    j["reservation_type"] = std::string(KindName(e.kind));
    if (e.duration) {
      j["expiry_duration"] =
          std::chrono::duration_cast<std::chrono::nanoseconds>(*e.duration).count();
    }
    j["enqueue_time"] = FormatTimestamp(e.enqueued);
  }
  json["total_gpus_allocated"] = json["total_gpus_held"];
  return json;
}

absl::Status Queue(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional[0], "' for 'queue'"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  std::string write_error;
  ASSIGN_OR_RETURN(std::vector<alloc::QueueRow> rows,
                   alloc::CollectQueue(*store, *ctx.machine, &write_error));
  WarnReadOnlyView(write_error);
  TimePoint now = ctx.machine->clock.Now();
  const nlohmann::ordered_json json = QueueJson(rows, now);
  if (flags.Has("json")) {
    std::printf("%s\n", DumpJson(WithGoToolFields(json, rows), 2).c_str());
    return absl::OkStatus();
  }
  if (rows.empty()) {
    std::printf("No requests waiting.\n");
    return absl::OkStatus();
  }
  bool color = ColorEnabled(ctx.no_color);
  Table table({"POSITION", "USER", "REQUEST", "TYPE", "HELD", "WAITING", "NOTE"},
              MakeStyle(color, "1;36"));
  for (const alloc::QueueRow& row : rows) {
    const QueueEntry& e = row.entry;
    std::vector<std::string> cells = {StrCat(row.position),
                                      UserWithDisplayName(e.user, e.display_user),
                                      Requested(e),
                                      std::string(KindLabel(e.kind)),
                                      StrCat(row.held.size(), "/", e.count),
                                      FormatDuration(Waited(e, now)),
                                      e.note};
    std::vector<Cell> out;
    for (std::string& text : cells) out.push_back({std::move(text), {}});
    table.AddRow(std::move(out));
  }
  std::string out = table.Render();
  std::printf("%s\n%zu request(s) waiting for %d GPU(s), %d held so far\n", out.c_str(),
              rows.size(), json["total_gpus_requested"].get<int>(),
              json["total_gpus_held"].get<int>());
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> QueueFlags() { return kQueueFlags; }

int QueueCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kQueueFlags, "queue", Queue);
}

}  // namespace canhazgpu::cli
