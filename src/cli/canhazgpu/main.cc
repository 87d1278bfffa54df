// canhazgpu: GPU reservations on a shared host. This file only wires real
// implementations (SQLite store, NVML/AMD/simulated providers, /proc, the
// system clock) into the commands; the commands live in *_command.cc.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "cli/canhazgpu/commands.h"
#include "cli/common/exit_code.h"
#include "core/strings.h"
#include "gpu/amd_gpu_provider.h"
#include "gpu/fake_host.h"
#include "gpu/nvml_gpu_provider.h"
#include "host/linux_process_table.h"
#include "host/signals.h"
#include "host/system_clock.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::cli {
namespace {

const std::map<std::string, int (*)(Context&, const Args&)> kCommands = {
    {"admin", AdminCommand},     {"status", StatusCommand}, {"reserve", ReserveCommand},
    {"release", ReleaseCommand}, {"run", RunCommand},       {"queue", QueueCommand},
};

constexpr char kUsage[] =
    "usage: canhazgpu COMMAND [flags]\n\n"
    "  admin     detect the GPUs and initialize the pool\n"
    "  status    who has which GPU, since when, and what runs there\n"
    "  reserve   reserve GPUs for a while (manual reservation)\n"
    "  release   release your reservations\n"
    "  run       reserve GPUs for exactly as long as a command runs\n"
    "  queue     the requests waiting for GPUs, first come first served\n\n"
    "Global flags: --state PATH, --memory-threshold MIB, --no-color.\n"
    "See docs/cli.md for every flag.\n";

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

absl::StatusOr<std::unique_ptr<gpu::GpuProvider>> MakeProvider(const ProviderOptions& options) {
  if (options.name == "fake") return std::make_unique<gpu::FakeGpuProvider>(options.fake_host);
  if (options.name == "amd") {
    return std::make_unique<gpu::AmdGpuProvider>(Env("CANHAZGPU_SYSFS_ROOT", "/"));
  }
  if (options.name == "nvidia") {
    auto nvml =
        gpu::NvmlGpuProvider::Create(Env("CANHAZGPU_NVML_LIBRARY", gpu::kDefaultNvmlLibrary));
    if (!nvml.ok()) return nvml.status();
    return std::unique_ptr<gpu::GpuProvider>(std::move(*nvml));
  }
  return absl::InvalidArgumentError(StrCat("unknown provider '", options.name, "'"));
}

absl::StatusOr<std::string> DetectProvider() {
  auto nvml = gpu::NvmlGpuProvider::Create(Env("CANHAZGPU_NVML_LIBRARY", gpu::kDefaultNvmlLibrary));
  if (nvml.ok()) return std::string("nvidia");
  if (gpu::AmdGpuProvider(Env("CANHAZGPU_SYSFS_ROOT", "/")).HasDevices()) return std::string("amd");
  return absl::FailedPreconditionError(
      StrCat("no GPUs detected (", nvml.status().message(),
             "; no amdgpu devices in /sys/class/drm); use 'canhazgpu admin --provider fake "
             "--gpus N' for a simulated host"));
}

absl::StatusOr<std::unique_ptr<store::StateStore>> OpenStore(const std::string& path, bool create) {
  auto store = store::SqliteStateStore::Open(path, {.create = create});
  if (!store.ok()) return store.status();
  return std::unique_ptr<store::StateStore>(std::move(*store));
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("canhazgpu %s (%s)\n", CANHAZGPU_VERSION, CANHAZGPU_GIT_COMMIT);
    return kExitOk;
  }
  auto command = kCommands.find(args[0]);
  if (command == kCommands.end()) {
    std::string suggestion;
    for (const auto& [name, fn] : kCommands) {
      if (EditDistance(args[0], name) <= 2) suggestion = StrCat(" (did you mean '", name, "'?)");
    }
    std::fprintf(stderr, "canhazgpu: unknown command '%s'%s; see 'canhazgpu --help'\n",
                 args[0].c_str(), suggestion.c_str());
    return kExitUsage;
  }
  // Progress and results go to pipes that may close early (`| head`); a
  // command holding GPUs or a queue place must live to give them back.
  host::IgnoreBrokenPipes();
  host::SystemClock clock;
  host::LinuxProcessTable processes;
  alloc::Machine machine{clock, processes};
  Context ctx;
  ctx.caller = {static_cast<uint32_t>(getuid()), processes.UserName(getuid())};
  ctx.machine = &machine;
  ctx.open_store = OpenStore;
  ctx.make_provider = MakeProvider;
  ctx.detect_provider = DetectProvider;
  return command->second(ctx, Args(args.begin() + 1, args.end()));
}

}  // namespace
}  // namespace canhazgpu::cli

int main(int argc, char** argv) { return canhazgpu::cli::Main(argc, argv); }
