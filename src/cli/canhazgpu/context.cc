#include "cli/canhazgpu/context.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/queue_wait.h"
#include "cli/common/exit_code.h"
#include "core/strings.h"

namespace canhazgpu::cli {

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec> kFlags = [] {
    std::vector<FlagSpec> flags = SettingFlags();
    flags.push_back({.name = "config",
                     .has_value = true,
                     .value_name = "FILE",
                     .help = "config file, .yaml/.json/.toml (env CANHAZGPU_CONFIG; default "
                             "~/.canhazgpu.yaml, then /etc/canhazgpu/config.yaml)"});
    return flags;
  }();
  return kFlags;
}

std::vector<FlagSpec> SettingFlags() {
  return {
      {.name = "state",
       .has_value = true,
       .value_name = "PATH",
       .help = "state file",
       .default_value = kDefaultStatePath},
      {.name = "memory-threshold",
       .has_value = true,
       .value_name = "MIB",
       .help = "memory above which an unreserved GPU counts as in use",
       .kind = FlagKind::kCount,
       .max = static_cast<int64_t>(alloc::kMaxMemoryThresholdMiB),
       .default_value = std::to_string(alloc::kDefaultMemoryThresholdMiB)},
      {.name = "no-color", .help = "no colour in output (also NO_COLOR=1)"},
      {.name = "remote_hosts",
       .has_value = true,
       .value_name = "HOSTS",
       .help = "ssh destinations for status --all and the dashboard",
       .kind = FlagKind::kList,
       .config_only = true},
  };
}

std::vector<std::string> DefaultConfigPaths(const Context& ctx) {
  std::vector<std::string> paths;
  if (std::optional<std::string> home = ctx.getenv("HOME"); home && !home->empty()) {
    paths.push_back(StrCat(*home, "/.canhazgpu.yaml"));
  }
  paths.push_back("/etc/canhazgpu/config.yaml");
  return paths;
}

absl::Status ApplyGlobalFlags(const ParsedFlags& flags, Context& ctx) {
  ctx.state_path = flags.Value("state").value_or(kDefaultStatePath);
  if (ctx.state_path.empty()) return absl::InvalidArgumentError("--state must not be empty");
  int64_t mib = alloc::kDefaultMemoryThresholdMiB;
  if (auto threshold = flags.Value("memory-threshold")) ParseInt(*threshold, &mib);
  ctx.threshold_bytes = static_cast<uint64_t>(mib) * kMiB;
  ctx.no_color = flags.Has("no-color");
  ctx.remote_hosts.clear();
  const std::string hosts = flags.Value("remote_hosts").value_or("");
  for (std::string_view host : Split(hosts, ',')) {
    if (!Trim(host).empty()) ctx.remote_hosts.emplace_back(Trim(host));
  }
  return absl::OkStatus();
}

namespace {

// --config, else CANHAZGPU_CONFIG, else the first default path that exists.
absl::Status LoadConfig(const ParsedFlags& flags, Context& ctx) {
  std::optional<std::string> path = flags.Value("config");
  if (!path) {
    if (auto env = ctx.getenv("CANHAZGPU_CONFIG"); env && !env->empty()) path = env;
  }
  if (!path) {
    for (const std::string& candidate : DefaultConfigPaths(ctx)) {
      if (access(candidate.c_str(), F_OK) == 0) {
        path = candidate;
        break;
      }
    }
  }
  ctx.config.reset();
  if (!path) return absl::OkStatus();
  absl::StatusOr<config::ConfigFile> file = config::LoadConfigFile(*path);
  if (!file.ok()) {
    return absl::InvalidArgumentError(std::string(file.status().message()));
  }
  if (absl::Status s = CheckConfigFile(*file, AllOptionScopes()); !s.ok()) return s;
  ctx.config = std::move(*file);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx) {
  std::vector<FlagSpec> all = specs;
  for (const FlagSpec& g : GlobalFlags()) all.push_back(g);
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, all, command);
  if (!flags.ok()) return flags.status();
  if (absl::Status s = LoadConfig(*flags, ctx); !s.ok()) return s;
  OptionSources sources{.file = ctx.config ? &*ctx.config : nullptr, .getenv = ctx.getenv};
  if (absl::Status s = ApplyOptionLayers({command, std::move(specs)}, sources, *flags); !s.ok()) {
    return s;
  }
  if (absl::Status s = ApplyOptionLayers({"", SettingFlags()}, sources, *flags); !s.ok()) return s;
  if (absl::Status s = ApplyGlobalFlags(*flags, ctx); !s.ok()) return s;
  return flags;
}

absl::StatusOr<std::vector<GpuInfo>> QueryGpusOrFail(Context& ctx, const PoolConfig& pool) {
  absl::Status failure;
  auto provider = ctx.make_provider({pool.provider, pool.fake_host});
  if (provider.ok()) {
    auto gpus = (*provider)->Query();
    if (gpus.ok()) return *std::move(gpus);
    failure = gpus.status();
  } else {
    failure = provider.status();
  }
  return absl::UnavailableError(StrCat("cannot query GPUs: ", failure.message()));
}

std::vector<GpuInfo> QueryGpus(Context& ctx, const PoolConfig& pool, absl::Status* failure) {
  absl::StatusOr<std::vector<GpuInfo>> gpus = QueryGpusOrFail(ctx, pool);
  if (failure != nullptr) *failure = gpus.status();
  if (gpus.ok()) return *std::move(gpus);
  std::vector<GpuInfo> broken(static_cast<size_t>(pool.gpu_count));
  for (size_t i = 0; i < broken.size(); ++i) {
    broken[i].index = static_cast<int>(i);
    broken[i].error = std::string(gpus.status().message());
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

void WarnReadOnlyView(const std::string& write_error) {
  static bool warned = false;
  if (write_error.empty() || warned) return;
  warned = true;
  std::fprintf(stderr, "canhazgpu: warning: %s; showing the state read-only\n",
               write_error.c_str());
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "canhazgpu: %s\n", std::string(status.message()).c_str());
  // A wait ended by a signal exits like a process killed by it (130 for ^C).
  if (absl::IsCancelled(status)) return SignalExitCode();
  return ExitCodeFor(status);
}

}  // namespace canhazgpu::cli
