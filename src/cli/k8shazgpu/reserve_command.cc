// `k8shazgpu reserve [run's selection flags] [--duration D] [--wait D]
// [--name NAME]`: holds GPUs in the cluster without a job, as `canhazgpu
// reserve` does on one host - a placeholder pod with the claim, made as
// `run` makes its objects and labelled a reservation, that sleeps until
// `release` or its deadline (--duration, activeDeadlineSeconds) ends it.
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_command.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

inline constexpr char kDefaultDuration[] = "8h";
inline constexpr char kDefaultWait[] = "10m";

// Sleeps until the pod is deleted (TERM ends it at once rather than after
// the grace period) or its deadline passes.
const std::vector<std::string> kPlaceholder = {
    "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"};

absl::StatusOr<int64_t> Seconds(const std::string& flag, const std::string& text) {
  absl::StatusOr<Duration> d = ParseDuration(text);
  if (!d.ok()) return absl::InvalidArgumentError(StrCat("--", flag, ": ", d.status().message()));
  return std::max<int64_t>(1, (d->count() + 999) / 1000);
}

}  // namespace

std::vector<FlagSpec> ReserveFlags() {
  // Which GPUs, as run says it, and the pod that holds them.
  std::vector<FlagSpec> flags = PlacementFlags();
  for (FlagSpec& f : PodFlags()) flags.push_back(std::move(f));
  flags.push_back({.name = "duration",
                   .has_value = true,
                   .value_name = "D",
                   .help = StrCat("hold the GPUs this long (default ", kDefaultDuration, ")"),
                   .kind = FlagKind::kDuration});
  flags.push_back({.name = "wait",
                   .has_value = true,
                   .value_name = "D",
                   .help = StrCat("wait in line at most this long (default ", kDefaultWait, ")"),
                   .kind = FlagKind::kDuration});
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
  ASSIGN_OR_RETURN(request.timeout_seconds,
                   Seconds("duration", flags.Value("duration").value_or(kDefaultDuration)));
  ASSIGN_OR_RETURN(request.wait_seconds,
                   Seconds("wait", flags.Value("wait").value_or(kDefaultWait)));
  return request;
}

int ReserveCommand(Context& ctx, const Args& args) {
  return RunCommandBody(
      ctx, args, ReserveFlags(), "reserve",
      [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
        ASSIGN_OR_RETURN(RunRequest request,
                         ParseReserveRequest(flags, c.Env("K8SHAZGPU_IMAGE", kDefaultRunImage)));
        return Run(c, request, DefaultRunHooks(*c.clock));
      });
}

}  // namespace canhazgpu::cli::k8s
