// canhazgpu status [--json]: who has which GPU, since when, and what really
// runs there.
#include <cstdio>

#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/status_view.h"
#include "cli/common/exit_code.h"
#include "cli/common/table.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {.name = "json", .short_name = 'j', .help = "JSON output"},
};

absl::Status Status(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional[0], "' for 'status'"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
  std::vector<GpuInfo> gpus = QueryGpus(ctx, pool);
  ASSIGN_OR_RETURN(alloc::HostStatus status,
                   alloc::CollectStatus(*store, gpus, ctx.threshold_bytes, *ctx.machine));
  TimePoint now = ctx.machine->clock.Now();
  std::string out = flags.Has("json") ? StatusJson(status, now).dump(2) + "\n"
                                      : RenderStatusTable(status, now, ColorEnabled(ctx.no_color));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> StatusFlags() { return kFlags; }

int StatusCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kFlags, "status", Status);
}

}  // namespace canhazgpu::cli
