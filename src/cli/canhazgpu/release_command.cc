// canhazgpu release [-G ids]: end the caller's own reservations.
#include <cstdio>

#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/host_mps.h"
#include "cli/common/exit_code.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kReleaseFlags = {
    {.name = "gpu-ids",
     .short_name = 'G',
     .has_value = true,
     .value_name = "IDS",
     .help = "release these GPUs (run reservations too); default: all your manual ones",
     .kind = FlagKind::kGpuIds},
    {.name = "force", .short_name = 'f', .help = "root only: release another user's GPUs"},
};

absl::Status Release(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '",
                                             flags.positional.empty() ? "--" : flags.positional[0],
                                             "' for 'release'; use --gpu-ids 1,3"));
  }
  std::vector<int> ids;
  if (auto v = flags.Value("gpu-ids")) {
    ASSIGN_OR_RETURN(ids, ParseGpuIds(*v));
  }
  bool force = flags.Has("force");
  if (force && !ctx.caller.IsRoot()) {
    return absl::PermissionDeniedError("--force is for root only");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(std::vector<int> released,
                   alloc::ReleaseGpus(*store, ctx.caller, ids, force, *ctx.machine));
  // Stops what a killed `run --gpu-mem` of the caller left under MPS.
  RecoverOwnMps(ctx, *store);
  if (released.empty()) {
    std::printf("No manual reservations of yours to release\n");
  } else {
    std::printf("Released %zu GPU(s): %s\n", released.size(), JoinGpuIds(released).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> ReleaseFlags() { return kReleaseFlags; }

int ReleaseCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kReleaseFlags, "release", Release);
}

}  // namespace canhazgpu::cli
