// What every canhazgpu command receives from main(): the resolved global
// options, the caller's identity, the machine seams, and factories for the
// real store and GPU provider (only main.cc builds real implementations).
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"
#include "cli/common/flags.h"
#include "config/config_file.h"
#include "gpu/gpu_provider.h"
#include "store/state_store.h"

namespace canhazgpu::cli {

inline constexpr char kDefaultStatePath[] = "/var/lib/canhazgpu/state.db";

// How `run --gpu-mem` limits a share on this host (docs/sharing.md, "On a
// host"): settings, from the config file or the environment.
struct HostSharing {
  bool enforce = true;                         // share-isolation: auto (true) or none
  std::string driver_root = "/";               // MPS: <root>/usr/bin/nvidia-cuda-mps-control
  std::string cgroup_root = "/sys/fs/cgroup";  // the cgroup v2 mount: dmem.capacity
  std::string dmem_cgroup;                     // the delegated parent of jobs' dmem cgroups
  std::string mps_dir = "/tmp";                // holds each user's canhazgpu-mps-<uid>
};

struct ProviderOptions {
  std::string name;       // "nvidia", "amd", "fake"
  std::string fake_host;  // for "fake"
};

struct Context {
  // Global options.
  std::string state_path = kDefaultStatePath;
  uint64_t threshold_bytes = alloc::kDefaultMemoryThresholdMiB * kMiB;
  bool no_color = false;
  std::vector<std::string> remote_hosts;
  HostSharing sharing;
  // The config file in effect, if any, and where options come from.
  std::optional<config::ConfigFile> config;
  std::function<std::optional<std::string>(const std::string&)> getenv =
      [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };

  alloc::Caller caller;
  const alloc::Machine* machine = nullptr;

  std::function<absl::StatusOr<std::unique_ptr<store::StateStore>>(const std::string& path,
                                                                   bool create)>
      open_store;
  std::function<absl::StatusOr<std::unique_ptr<gpu::GpuProvider>>(const ProviderOptions&)>
      make_provider;
  // Auto-detection for `admin` without --provider: "nvidia", "amd" or an
  // error saying what was looked for.
  std::function<absl::StatusOr<std::string>()> detect_provider;
};

// Flags every command accepts: the settings below plus --config.
// --redis-host/--redis-port/--redis-db (the Go tool's) are among the
// settings: accepted from every layer, ignored with one notice on stderr.
const std::vector<FlagSpec>& GlobalFlags();
// The global options a config file may set (remote_hosts among them).
std::vector<FlagSpec> SettingFlags();
// GlobalFlags() as help shows them: a flag set in the environment
// (CANHAZGPU_STATE) shows that value, and where it comes from, as its default.
std::vector<FlagSpec> GlobalFlagsInEffect(
    const std::function<std::optional<std::string>(const std::string&)>& getenv);

// The config files looked for when neither --config nor CANHAZGPU_CONFIG
// names one, first found wins: the Go tool's (viper's) places, `.canhazgpu`
// with an extension or none in $HOME, then in the current directory ("./",
// read only when the caller owns the file and others may not write it),
// then /etc/canhazgpu/config.yaml.
std::vector<std::string> DefaultConfigPaths(const Context& ctx);

// Applies global flags (already layered) to `ctx`.
absl::Status ApplyGlobalFlags(const ParsedFlags& flags, Context& ctx);

// Parses `args` against the command's flags plus the global ones, loads the
// config file, fills every flag the command line left unset from the
// environment, the file or its default (cli/common/option_layers.h), and
// applies the global ones to `ctx`.
absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx);

// The GPUs as the pool's provider reports them now. A provider that fails
// as a whole yields one ERROR entry per GPU carrying its message, so status
// still shows the reservations and nothing is handed out; `failure`, when
// given, receives that failure (OK otherwise), for status to show it once.
std::vector<GpuInfo> QueryGpus(Context& ctx, const PoolConfig& pool,
                               absl::Status* failure = nullptr);

// For commands that need GPUs: a provider that fails as a whole (the driver
// library missing) is an Unavailable error with its message, so run and
// reserve stop at once instead of queueing behind GPUs that are all ERROR.
absl::StatusOr<std::vector<GpuInfo>> QueryGpusOrFail(Context& ctx, const PoolConfig& pool);

// A view (status, queue, the dashboard) that could not write the state file
// says so once per process on stderr, and goes on read-only.
void WarnReadOnlyView(const std::string& write_error);

// Prints "canhazgpu: <message>" on stderr and returns the exit code.
int Fail(const absl::Status& status);

// The frame of every command: parses `args` against `specs` (plus the global
// flags), runs `body`, and turns a failure into one stderr line and its
// exit code.
using CommandBody = std::function<absl::Status(Context&, const ParsedFlags&)>;
int RunCommandBody(Context& ctx, const std::vector<std::string>& args, std::vector<FlagSpec> specs,
                   const std::string& command, const CommandBody& body);

}  // namespace canhazgpu::cli
