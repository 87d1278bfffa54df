// canhazgpu reserve: a manual reservation that expires.
#include <unistd.h>

#include <cstdio>

#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/host_mps.h"
#include "cli/canhazgpu/queue_wait.h"
#include "cli/canhazgpu/request_flags.h"
#include "cli/canhazgpu/share_isolation.h"
#include "cli/common/exit_code.h"
#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags = RequestFlags();
  flags.push_back({.name = "duration",
                   .short_name = 'd',
                   .has_value = true,
                   .value_name = "DURATION",
                   .help = "how long, e.g. 30m, 2h, 1h30m",
                   .kind = FlagKind::kDuration,
                   .default_value = "30m"});
  flags.push_back({.name = "short",
                   .short_name = 's',
                   .help = "print only the ids, like 1,3 (with --mig, the instances' UUIDs)"});
  flags.push_back(
      {.name = "force", .short_name = 'f', .help = "take GPUs in use without a reservation"});
  return flags;
}

absl::Status Reserve(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError("'reserve' takes no command; did you mean 'canhazgpu run'?");
  }
  dra::DeviceWants wants;
  ASSIGN_OR_RETURN(alloc::ReserveRequest request, ParseRequestFlags(flags, &wants));
  ASSIGN_OR_RETURN(Duration duration, ParseDuration(flags.Value("duration").value_or("30m")));
  request.kind = ReservationKind::kManual;
  request.duration = duration;
  request.force = flags.Has("force");
  request.threshold_bytes = ctx.threshold_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, QueryGpusOrFail(ctx, pool));
  ASSIGN_OR_RETURN(dra::HostSelection selection, SelectDevices(gpus, wants, &request));
  RecoverOwnMps(ctx, *store);
  ASSIGN_OR_RETURN(std::vector<int> ids, AcquireWithQueue(ctx, *store, pool, request, flags, gpus));
  std::string list = JoinGpuIds(ids);
  // What CUDA_VISIBLE_DEVICES takes: the ids, or the MIG instances' UUIDs.
  std::string visible = Join(VisibleDevices(ids, selection), ",");
  if (flags.Has("short")) {
    // Exactly that for $(...); a newline only for a person at a terminal.
    std::printf("%s%s", visible.c_str(), isatty(STDOUT_FILENO) ? "\n" : "");
    return absl::OkStatus();
  }
  if (request.memory > 0) {
    // Processes started later cannot be given a share's MPS environment:
    // the level is none, and the line says what gives more (run_share.h).
    std::printf("Reserved %s of each of %zu GPU(s): %s for %s (shared; %s)\n\n",
                store::FormatBytes(request.memory).c_str(), ids.size(), list.c_str(),
                FormatDuration(duration).c_str(),
                ReservationIsolation(ctx.sharing, gpus, ids).c_str());
  } else {
    std::printf("Reserved %zu GPU(s): %s for %s\n\n", ids.size(), list.c_str(),
                FormatDuration(duration).c_str());
  }
  std::printf("Run the following command to run only on %s:\n",
              selection.mig_uuid.empty() ? "these GPUs" : "these MIG instances");
  std::printf("export CUDA_VISIBLE_DEVICES=%s\n", visible.c_str());
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> ReserveFlags() { return Flags(); }

int ReserveCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, Flags(), "reserve", Reserve);
}

}  // namespace canhazgpu::cli
