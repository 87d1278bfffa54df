#include "cli/canhazgpu/context.h"

#include <sys/stat.h>
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
                             "~/.canhazgpu.*, then ./.canhazgpu.*, then "
                             "/etc/canhazgpu/config.yaml)"});
    return flags;
  }();
  return kFlags;
}

std::vector<FlagSpec> GlobalFlagsInEffect(
    const std::function<std::optional<std::string>(const std::string&)>& getenv) {
  std::vector<FlagSpec> flags = GlobalFlags();
  for (FlagSpec& spec : flags) {
    if (!spec.has_value) continue;
    const std::string name = EnvName(spec.name);
    // An empty variable is no value, as ApplyOptionLayers reads it.
    if (std::optional<std::string> value = getenv(name); value && !value->empty()) {
      spec.default_value = StrCat(*value, ", from ", name);
    }
  }
  return flags;
}

namespace {

// The host's share isolation (docs/sharing.md, "On a host"): settings only,
// an admin's (or a test's) choice, not a flag of every command.
void AddSharingSettings(std::vector<FlagSpec>& flags) {
  flags.push_back({.name = "share-isolation",
                   .has_value = true,
                   .value_name = "LEVEL",
                   .help = "how run limits a --gpu-mem share: auto (MPS, and dmem where "
                           "configured, as the host offers them) or none (booked only)",
                   .kind = FlagKind::kChoice,
                   .choices = {"auto", "none"},
                   .default_value = "auto",
                   .config_only = true});
  flags.push_back({.name = "driver-root",
                   .has_value = true,
                   .value_name = "DIR",
                   .help = "the NVIDIA driver's root: MPS is <DIR>/usr/bin/nvidia-cuda-mps-control",
                   .default_value = "/",
                   .config_only = true});
  flags.push_back({.name = "cgroup-root",
                   .has_value = true,
                   .value_name = "DIR",
                   .help = "the cgroup v2 mount, where the dmem controller is looked for",
                   .default_value = "/sys/fs/cgroup",
                   .config_only = true});
  flags.push_back({.name = "dmem-cgroup",
                   .has_value = true,
                   .value_name = "DIR",
                   .help = "a cgroup with dmem in its cgroup.subtree_control where run puts a "
                           "--gpu-mem job, its share as dmem.max; unset: no dmem limits",
                   .config_only = true});
  flags.push_back({.name = "mps-dir",
                   .has_value = true,
                   .value_name = "DIR",
                   .help = "where each user's MPS directory canhazgpu-mps-<uid> is made (keep "
                           "it short: MPS puts sockets there)",
                   .default_value = "/tmp",
                   .config_only = true});
}

}  // namespace

std::vector<FlagSpec> SettingFlags() {
  std::vector<FlagSpec> flags = {
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
  AddSharingSettings(flags);
  // The Go tool's Redis connection: accepted (scripts and config files
  // still pass them) and ignored, with a notice (GoToolNotices).
  for (const char* name : {"redis-host", "redis-port", "redis-db"}) {
    flags.push_back({.name = name,
                     .has_value = true,
                     .value_name = "VALUE",
                     .help = "the Go tool's Redis server; ignored: state is local (--state)"});
  }
  return flags;
}

std::vector<std::string> DefaultConfigPaths(const Context& ctx) {
  // Viper's search, as the Go tool set it up: `.canhazgpu` in $HOME, then in
  // the current directory, each with viper's extensions in viper's order
  // (those our loader reads), then the bare name (YAML, as the Go tool's
  // SetConfigType said). Ours last.
  std::vector<std::string> dirs;
  if (std::optional<std::string> home = ctx.getenv("HOME"); home && !home->empty()) {
    dirs.push_back(*home + "/");
  }
  dirs.push_back("./");
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    for (const char* ext : {".json", ".toml", ".yaml", ".yml", ""}) {
      paths.push_back(StrCat(dir, ".canhazgpu", ext));
    }
  }
  paths.push_back("/etc/canhazgpu/config.yaml");
  return paths;
}

const std::vector<std::string>& GoToolOnlyKeys() {
  // Keys the Go tool's viper bound that name nothing here (redis.* are
  // accepted as options, see SettingFlags; web.demo is ours too). A key
  // that is one of ours is ours, not this list's.
  static const std::vector<std::string> kKeys = {"status.no-color"};
  return kKeys;
}

namespace {

// The sharing settings; each path absolute (the MPS daemon and the kernel
// would read a relative one from elsewhere), an empty one its default. "%u"
// in dmem-cgroup is the caller's uid: one line in /etc/canhazgpu/config.yaml
// can name each user's own delegated cgroup.
absl::Status ApplySharingSettings(const ParsedFlags& flags, uint32_t uid, HostSharing& sharing) {
  HostSharing defaults;
  sharing.enforce = flags.Value("share-isolation").value_or("auto") != "none";
  struct PathSetting {
    const char* name;
    std::string* value;
    std::string fallback;
  };
  for (PathSetting p : {PathSetting{"driver-root", &sharing.driver_root, defaults.driver_root},
                        PathSetting{"cgroup-root", &sharing.cgroup_root, defaults.cgroup_root},
                        PathSetting{"dmem-cgroup", &sharing.dmem_cgroup, defaults.dmem_cgroup},
                        PathSetting{"mps-dir", &sharing.mps_dir, defaults.mps_dir}}) {
    *p.value = flags.Value(p.name).value_or("");
    if (p.value->empty()) *p.value = p.fallback;
    if (p.value == &sharing.dmem_cgroup) {
      const std::string id = std::to_string(uid);
      for (size_t at = p.value->find("%u"); at != std::string::npos;
           at = p.value->find("%u", at + id.size())) {
        p.value->replace(at, 2, id);
      }
    }
    if (!p.value->empty() && (*p.value)[0] != '/') {
      return absl::InvalidArgumentError(StrCat("the setting ", p.name,
                                               " must be an absolute path, not '",
                                               EscapeForDisplay(*p.value), "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyGlobalFlags(const ParsedFlags& flags, Context& ctx) {
  ctx.state_path = flags.Value("state").value_or(kDefaultStatePath);
  if (ctx.state_path.empty()) return absl::InvalidArgumentError("--state must not be empty");
  int64_t mib = alloc::kDefaultMemoryThresholdMiB;
  if (auto threshold = flags.Value("memory-threshold")) ParseInt(*threshold, &mib);
  ctx.threshold_bytes = static_cast<uint64_t>(mib) * kMiB;
  ctx.no_color = flags.Has("no-color");
  if (absl::Status s = ApplySharingSettings(flags, ctx.caller.uid, ctx.sharing); !s.ok()) {
    return s;
  }
  ctx.remote_hosts.clear();
  const std::string hosts = flags.Value("remote_hosts").value_or("");
  for (std::string_view host : Split(hosts, ',')) {
    if (!Trim(host).empty()) ctx.remote_hosts.emplace_back(Trim(host));
  }
  return absl::OkStatus();
}

namespace {

void Note(const std::string& text) { std::fprintf(stderr, "canhazgpu: note: %s\n", text.c_str()); }

// A file in the current directory is read only when it is the caller's and
// nobody else may write it: another user's directory must not choose the
// state file or the ssh program of whoever runs canhazgpu there.
bool TrustedInWorkingDirectory(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  if (st.st_uid != getuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    Note(StrCat(path, " is not read: it is not yours, or others may write it"));
    return false;
  }
  return true;
}

// Takes the Go tool's keys that mean nothing here out of `file` into
// `dropped`; the rest is checked as before (a typo stays an error).
void DropGoToolKeys(config::ConfigFile& file, const std::vector<OptionScope>& scopes,
                    std::vector<std::string>& dropped) {
  for (auto it = file.values.begin(); it != file.values.end();) {
    const std::string wanted = EnvName(it->first);
    bool ours = false;
    for (const OptionScope& scope : scopes) {
      for (const FlagSpec& spec : scope.specs) {
        ours = ours || EnvName(OptionKey(scope.scope, spec.name)) == wanted;
      }
    }
    bool go = false;
    for (const std::string& key : GoToolOnlyKeys()) go = go || EnvName(key) == wanted;
    if (ours || !go) {
      ++it;
      continue;
    }
    dropped.push_back(it->first);
    it = file.values.erase(it);
  }
}

// --config, else CANHAZGPU_CONFIG, else the first default path that exists.
absl::Status LoadConfig(const ParsedFlags& flags, Context& ctx, std::vector<std::string>& go_keys) {
  std::optional<std::string> path = flags.Value("config");
  if (!path) {
    if (auto env = ctx.getenv("CANHAZGPU_CONFIG"); env && !env->empty()) path = env;
  }
  if (!path) {
    for (const std::string& candidate : DefaultConfigPaths(ctx)) {
      if (access(candidate.c_str(), F_OK) != 0) continue;
      if (candidate.starts_with("./") && !TrustedInWorkingDirectory(candidate)) continue;
      path = candidate;
      break;
    }
  }
  ctx.config.reset();
  if (!path) return absl::OkStatus();
  absl::StatusOr<config::ConfigFile> file = config::LoadConfigFile(*path);
  if (!file.ok()) {
    return absl::InvalidArgumentError(std::string(file.status().message()));
  }
  const std::vector<OptionScope> scopes = AllOptionScopes();
  DropGoToolKeys(*file, scopes, go_keys);
  if (absl::Status s = CheckConfigFile(*file, scopes); !s.ok()) return s;
  ctx.config = std::move(*file);
  return absl::OkStatus();
}

// One line for the Go tool's settings in the config file (`file_keys`, and
// redis.* read from it), one for those on the command line or in the
// environment: they are accepted, so old files and scripts still work, and
// ignored.
void GoToolNotices(const ParsedFlags& flags, const Context& ctx,
                   std::vector<std::string> file_keys) {
  std::vector<std::string> elsewhere;
  for (const char* name : {"redis-host", "redis-port", "redis-db"}) {
    auto origin = flags.origins.find(name);
    if (origin == flags.origins.end() || origin->second.source == FlagSource::kDefault) continue;
    if (origin->second.source == FlagSource::kConfigFile) {
      std::string key = name;
      key[key.find('-')] = '.';  // redis.host, as the Go tool's files spell it
      file_keys.push_back(key);
    } else {
      elsewhere.push_back(origin->second.where);  // --redis-host, CANHAZGPU_REDIS_HOST
    }
  }
  auto note = [&](const std::string& where, const std::vector<std::string>& names) {
    if (names.empty()) return;
    Note(StrCat(where, "'", Join(names, "', '"), names.size() == 1 ? "' is" : "' are",
                " the Go tool's, ignored here (state is local: the SQLite file ", ctx.state_path,
                ")"));
  };
  note(ctx.config ? StrCat(ctx.config->path, ": ") : "", file_keys);
  note("", elsewhere);
}

}  // namespace

absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx) {
  std::vector<FlagSpec> all = specs;
  for (const FlagSpec& g : GlobalFlags()) all.push_back(g);
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, all, command);
  if (!flags.ok()) return flags.status();
  std::vector<std::string> go_keys;
  if (absl::Status s = LoadConfig(*flags, ctx, go_keys); !s.ok()) return s;
  OptionSources sources{.file = ctx.config ? &*ctx.config : nullptr, .getenv = ctx.getenv};
  if (absl::Status s = ApplyOptionLayers({command, std::move(specs)}, sources, *flags); !s.ok()) {
    return s;
  }
  if (absl::Status s = ApplyOptionLayers({"", SettingFlags()}, sources, *flags); !s.ok()) return s;
  if (absl::Status s = ApplyGlobalFlags(*flags, ctx); !s.ok()) return s;
  GoToolNotices(*flags, ctx, std::move(go_keys));
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
