// canhazgpu report [--days N] [--json|--csv]: GPU-hours per user over a
// period, RUN, MANUAL and K8S apart, and how much of it the GPUs were busy, idle
// or unknown (no samples), with totals against the GPU-hours available; a
// share of a GPU's memory counts as its part of the GPU (shared_gpu_hours).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "alloc/report.h"
#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/report_view.h"
#include "cli/common/table.h"
#include "core/duration.h"
#include "core/json_text.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kReportFlags = {
    {.name = "days",
     .short_name = 'd',
     .has_value = true,
     .value_name = "N",
     .help = "the period: the last N days",
     .kind = FlagKind::kPositiveInt,
     .max = alloc::kMaxReportDays,
     .default_value = "30"},
    {.name = "json", .short_name = 'j', .help = "JSON output"},
    {.name = "csv", .help = "CSV output, one row per user"},
};

double Hours(int64_t ms) { return static_cast<double>(ms) / 3'600'000.0; }

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string Date(TimePoint t) { return FormatTimestamp(t).substr(0, 10); }

// `whole`: the period's total reserved time, for the Go tool's percentage.
nlohmann::ordered_json UserJson(const alloc::UserUsage& u, int64_t whole) {
  return {{"user", u.user},
          {"name", u.user},  // the Go tool's name for it
          {"gpu_hours", Hours(u.total_ms())},
          {"percentage", 100.0 * Share(u.total_ms(), whole)},
          {"run_count", u.run_count},
          {"manual_count", u.manual_count},
          {"run_gpu_hours", Hours(u.run_ms)},
          {"manual_gpu_hours", Hours(u.manual_ms)},
          {"k8s_gpu_hours", Hours(u.k8s_ms)},
          {"busy_gpu_hours", Hours(u.split.busy_ms)},
          {"idle_gpu_hours", Hours(u.split.idle_ms)},
          {"unknown_gpu_hours", Hours(u.split.unknown_ms)},
          {"reservations", u.reservations},
          {"longest_seconds", u.longest_ms / 1000},
          // Of gpu_hours, what shares of GPUs count (each its part of the GPU).
          {"shared_gpu_hours", Hours(u.shared_ms)}};
}

}  // namespace

// The Go tool's fields (users[].name, percentage, run_count, manual_count;
// total_gpu_hours, total_reservations, unique_users, start_date, end_date,
// days) beside ours, so scripts written for it keep working.
nlohmann::ordered_json ReportJson(const alloc::UsageReport& r, int days) {
  const int64_t whole = r.total.total_ms();
  nlohmann::ordered_json users = nlohmann::ordered_json::array();
  for (const alloc::UserUsage& u : r.users) users.push_back(UserJson(u, whole));
  return {{"start", FormatTimestamp(r.from)},
          {"end", FormatTimestamp(r.to)},
          {"start_date", Date(r.from)},
          {"end_date", Date(r.to)},
          {"days", days},
          {"gpus", r.gpu_count},
          {"users", users},
          {"total", UserJson(r.total, whole)},
          {"total_gpu_hours", Hours(whole)},
          {"total_reservations", r.total.reservations},
          {"unique_users", r.users.size()},
          {"available_gpu_hours", Hours(r.available_ms)},
          {"used_share", Share(r.total.total_ms(), r.available_ms)}};
}

namespace {

std::string Csv(const alloc::UsageReport& r) {
  std::string out =
      "user,gpu_hours,run_gpu_hours,manual_gpu_hours,k8s_gpu_hours,busy_gpu_hours,"
      "idle_gpu_hours,unknown_gpu_hours,reservations,longest_seconds,shared_gpu_hours\n";
  auto row = [&](const alloc::UserUsage& u) {
    // Names are user names; quote anyway, so a comma cannot shift columns,
    // and escape as everywhere, so a name cannot end the row.
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on insert().
    std::string name;
    for (char c : EscapeForDisplay(u.user)) {
      if (c == '"') name += '"';
      name += c;
    }
    out +=
        absl::StrFormat("\"%s\",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%d,%.3f\n", name,
                        Hours(u.total_ms()), Hours(u.run_ms), Hours(u.manual_ms), Hours(u.k8s_ms),
                        Hours(u.split.busy_ms), Hours(u.split.idle_ms), Hours(u.split.unknown_ms),
                        u.reservations, u.longest_ms / 1000, Hours(u.shared_ms));
  };
  for (const alloc::UserUsage& u : r.users) row(u);
  row(r.total);
  return out;
}

absl::Status Report(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional[0], "' for 'report'"));
  }
  if (flags.Has("json") && flags.Has("csv")) {
    return absl::InvalidArgumentError("--json and --csv: choose one");
  }
  int days = 30;
  ParseInt(*flags.Value("days"), &days);
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(alloc::UsageReport report,
                   alloc::CollectReport(*store, days, ctx.machine->clock.Now()));
  std::string out = flags.Has("json")  ? DumpJson(ReportJson(report, days), 2) + "\n"
                    : flags.Has("csv") ? Csv(report)
                                       : ReportText(report, days, ColorEnabled(ctx.no_color));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> ReportFlags() { return kReportFlags; }

int ReportCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kReportFlags, "report", Report);
}

}  // namespace canhazgpu::cli
