// `k8shazgpu reserve [run's selection flags] [-d D] [-w D | --nonblock]
// [--short] [--name NAME] [--note TEXT]`: holds GPUs in the cluster without a job, as `canhazgpu
// reserve` does on one host - a placeholder pod with the claim, made as
// `run` makes its objects and labelled a reservation, that sleeps until
// `release` or its deadline (--duration, activeDeadlineSeconds) ends it.
// With --nodes N --gpus-per-node G: N such placeholders on N nodes, held
// all at once, as `run --nodes` admits its ranks (gang_run.h).
#include "cli/k8shazgpu/cluster_defaults.h"
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/gang_run.h"
#include "cli/k8shazgpu/run_command.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

// The host tool's default (canhazgpu reserve -d), so a habit carries over.
inline constexpr char kDefaultDuration[] = "30m";

// Sleeps until the pod is deleted (TERM ends it at once rather than after
// the grace period) or its deadline passes.
const std::vector<std::string> kPlaceholder = {
    "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"};

}  // namespace

std::vector<FlagSpec> ReserveFlags() {
  // Which GPUs, as run says it, and the pod that holds them.
  std::vector<FlagSpec> flags = PlacementFlags();
  for (FlagSpec& f : PodFlags()) flags.push_back(std::move(f));
  flags.push_back({.name = "duration",
                   .short_name = 'd',
                   .has_value = true,
                   .value_name = "D",
                   .help = StrCat("hold the GPUs this long (default ", kDefaultDuration, ")"),
                   .kind = FlagKind::kDuration});
  for (FlagSpec& f : WaitFlags()) flags.push_back(std::move(f));
  flags.push_back({.name = "short",
                   .short_name = 's',
                   .help = "print only the devices, like gpu-0,gpu-1 (for scripts)"});
  // A set of nodes held together, as `run --nodes` runs on them.
  for (FlagSpec& f : GangFlags()) {
    if (f.name == "nodes" || f.name == "gpus-per-node") flags.push_back(std::move(f));
  }
  return flags;
}

absl::StatusOr<RunRequest> ParseReserveRequest(const ParsedFlags& flags, const std::string& image) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional.empty() ? "--" : flags.positional[0],
               "' for 'reserve'; it runs no command (use 'k8shazgpu run' for one)"));
  }
  ParsedFlags as_run = flags;
  as_run.rest = kPlaceholder;
  ASSIGN_OR_RETURN(RunRequest request,
                   ParseRunRequest(as_run, {.image = image, .port = {}, .shared_memory = false}));
  request.reservation = true;
  request.short_output = flags.Has("short");
  ASSIGN_OR_RETURN(request.timeout_seconds,
                   DurationSeconds("duration", flags.Value("duration").value_or(kDefaultDuration)));
  // A reservation ends by its deadline or `release`, never by a TTL.
  request.ttl_seconds.reset();
  return request;
}

int ReserveCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, ReserveFlags(), "reserve",
                        [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
                          ASSIGN_OR_RETURN(RunRequest request,
                                           ParseReserveRequest(flags, kDefaultRunImage));
                          RETURN_IF_ERROR(ApplyClusterDefaults(c, flags, request));
                          if (request.nodes > 0) {
                            return RunGang(c, request, DefaultRunHooks(*c.clock));
                          }
                          return Run(c, request, DefaultRunHooks(*c.clock));
                        });
}

}  // namespace canhazgpu::cli::k8s
