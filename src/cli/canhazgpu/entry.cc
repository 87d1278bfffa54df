// The entry point of canhazgpu (and of canhazgpu-web): wires the real
// implementations (SQLite store, NVML/AMD/simulated providers, /proc, the
// system clock) into the commands; the commands live in *_command.cc.
#include "cli/canhazgpu/entry.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/canhazgpu/commands.h"
#include "cli/common/dispatch.h"
#include "cli/common/exit_code.h"
#include "core/strings.h"
#include "gpu/amd_gpu_provider.h"
#include "gpu/fake_host.h"
#include "gpu/nvml_gpu_provider.h"
#include "host/linux_process_table.h"
#include "host/signals.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::cli {
namespace {

std::optional<std::string> GetEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

ProgramFront Front() {
  // Help shows the state file in effect, CANHAZGPU_STATE's where it is set.
  std::vector<FlagSpec> globals = GlobalFlagsInEffect(GetEnv);
  std::string state;
  for (const FlagSpec& spec : globals) {
    if (spec.name == "state") state = spec.default_value;
  }
  return {.name = "canhazgpu",
          .version_line = StrCat("canhazgpu ", CANHAZGPU_VERSION, " (", CANHAZGPU_GIT_COMMIT, ")"),
          .globals = std::move(globals),
          .globals_help =
              StrCat("\nGlobal flags: --config FILE, --state PATH (default ", state,
                     "),\n--memory-threshold MIB, --no-color.\n"
                     "Every flag can also be set as CANHAZGPU_<COMMAND>_<FLAG> or in the config "
                     "file;\n'canhazgpu config show' prints where each value comes from.\n"
                     "'canhazgpu COMMAND --help' lists a command's flags.\n")};
}

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
    auto nvml = gpu::NvmlGpuProvider::Create(
        Env("CANHAZGPU_NVML_LIBRARY", gpu::kDefaultNvmlLibrary), Env("CANHAZGPU_SYSFS_ROOT", "/"));
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

}  // namespace

int Main(int argc, char** argv) {
  FrontChoice choice =
      ChooseCommand(Front(), Commands(), std::vector<std::string>(argv + 1, argv + argc));
  std::fputs(choice.out.c_str(), stdout);
  std::fputs(choice.err.c_str(), stderr);
  if (choice.exit_code) return *choice.exit_code;
  // Progress and results go to pipes that may close early (`| head`); a
  // command holding GPUs or a queue place must live to give them back.
  host::IgnoreBrokenPipes();
  const Clock& clock = RealClock();
  host::LinuxProcessTable processes;
  alloc::Machine machine{clock, processes};
  Context ctx;
  ctx.caller = {static_cast<uint32_t>(getuid()), processes.UserName(getuid())};
  ctx.machine = &machine;
  ctx.open_store = OpenStore;
  ctx.make_provider = MakeProvider;
  ctx.detect_provider = DetectProvider;
  return Commands()[choice.command].run(ctx, choice.args);
}

}  // namespace canhazgpu::cli
