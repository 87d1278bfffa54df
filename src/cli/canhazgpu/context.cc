#include "cli/canhazgpu/context.h"

#include <cstdio>
#include <cstdlib>

#include "cli/canhazgpu/queue_wait.h"
#include "cli/common/exit_code.h"
#include "core/strings.h"

namespace canhazgpu::cli {

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {.name = "state",
       .has_value = true,
       .value_name = "PATH",
       .help = "state file (env CANHAZGPU_STATE; default /var/lib/canhazgpu/state.db)"},
      {.name = "memory-threshold",
       .has_value = true,
       .value_name = "MIB",
       .help = "memory above which an unreserved GPU counts as in use (default 1024)"},
      {.name = "no-color", .help = "no colour in output (also NO_COLOR=1)"},
  };
  return kFlags;
}

absl::Status ApplyGlobalFlags(const ParsedFlags& flags, Context& ctx) {
  if (auto state = flags.Value("state")) {
    ctx.state_path = *state;
  } else if (const char* env = std::getenv("CANHAZGPU_STATE"); env != nullptr && *env != '\0') {
    ctx.state_path = env;
  }
  if (ctx.state_path.empty()) return absl::InvalidArgumentError("--state must not be empty");
  std::optional<std::string> threshold = flags.Value("memory-threshold");
  std::string threshold_source = "--memory-threshold";
  if (!threshold) {
    if (const char* env = std::getenv("CANHAZGPU_MEMORY_THRESHOLD"); env != nullptr) {
      threshold = env;
      threshold_source = "CANHAZGPU_MEMORY_THRESHOLD";
    }
  }
  if (threshold) {
    int64_t mib = 0;
    if (!ParseInt(*threshold, &mib) || mib < 0) {
      return absl::InvalidArgumentError(StrCat("invalid value '", *threshold, "' for ",
                                               threshold_source, ": expected MiB as an integer"));
    }
    ctx.threshold_bytes = static_cast<uint64_t>(mib) * kMiB;
  }
  ctx.no_color = flags.Has("no-color");
  return absl::OkStatus();
}

absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx) {
  for (const FlagSpec& g : GlobalFlags()) specs.push_back(g);
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs, command);
  if (!flags.ok()) return flags.status();
  if (absl::Status s = ApplyGlobalFlags(*flags, ctx); !s.ok()) return s;
  return flags;
}

std::vector<GpuInfo> QueryGpus(Context& ctx, const PoolConfig& pool) {
  absl::Status failure;
  auto provider = ctx.make_provider({pool.provider, pool.fake_host});
  if (provider.ok()) {
    auto gpus = (*provider)->Query();
    if (gpus.ok()) return *std::move(gpus);
    failure = gpus.status();
  } else {
    failure = provider.status();
  }
  std::vector<GpuInfo> broken(static_cast<size_t>(pool.gpu_count));
  for (size_t i = 0; i < broken.size(); ++i) {
    broken[i].index = static_cast<int>(i);
    broken[i].error = StrCat("cannot query GPUs: ", failure.message());
  }
  return broken;
}

int RunCommandBody(Context& ctx, const std::vector<std::string>& args, std::vector<FlagSpec> specs,
                   const std::string& command, const CommandBody& body) {
  absl::StatusOr<ParsedFlags> flags = ParseCommandFlags(args, std::move(specs), command, ctx);
  if (!flags.ok()) return Fail(flags.status());
  absl::Status status = body(ctx, *flags);
  return status.ok() ? kExitOk : Fail(status);
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "canhazgpu: %s\n", std::string(status.message()).c_str());
  // A wait ended by a signal exits like a process killed by it (130 for ^C).
  if (absl::IsCancelled(status)) return SignalExitCode();
  return ExitCodeFor(status);
}

}  // namespace canhazgpu::cli
