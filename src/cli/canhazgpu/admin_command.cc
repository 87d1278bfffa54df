// canhazgpu admin: detect the GPUs and initialise (or, with --force,
// reinitialise) the pool in the state file.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/canhazgpu/commands.h"
#include "cli/common/exit_code.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "gpu/fake_host.h"

namespace canhazgpu::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {.name = "gpus",
     .short_name = 'g',
     .has_value = true,
     .value_name = "N",
     .help = "number of GPUs (default: as detected)",
     .kind = FlagKind::kPositiveInt,
     .max = kMaxGpus},
    {.name = "provider",
     .short_name = 'p',
     .has_value = true,
     .value_name = "NAME",
     .help = "nvidia, amd or fake (default: detect)"},
    {.name = "fake-host",
     .has_value = true,
     .value_name = "FILE",
     .help = "simulated host JSON (default: fake-host.json next to the state file)"},
    {.name = "force", .help = "reinitialize, ending every reservation"},
};

// The simulated host file: an existing one is validated and used; a missing
// one is created with `gpus` idle GPUs.
absl::Status PrepareFakeHost(const std::string& path, std::optional<int> gpus) {
  if (std::filesystem::exists(path)) return gpu::LoadFakeHost(path).status();
  if (!gpus) {
    return absl::InvalidArgumentError(
        StrCat("--gpus is required to create the simulated host ", path));
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  return gpu::WriteDefaultFakeHost(path, *gpus);
}

absl::Status Admin(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '",
                                             flags.positional.empty() ? "--" : flags.positional[0],
                                             "' for 'admin'"));
  }
  std::optional<int> gpus;
  if (auto v = flags.Value("gpus")) {
    ASSIGN_OR_RETURN(gpus, PositiveInt("gpus", *v));
  }
  ProviderOptions options;
  if (auto p = flags.Value("provider")) {
    if (*p != "nvidia" && *p != "amd" && *p != "fake") {
      return absl::InvalidArgumentError(
          StrCat("invalid provider '", *p, "': valid providers are nvidia, amd, fake"));
    }
    options.name = *p;
  }
  if (flags.Has("fake-host") && options.name != "fake") {
    return absl::InvalidArgumentError("--fake-host needs --provider fake");
  }
  if (options.name.empty()) {
    ASSIGN_OR_RETURN(options.name, ctx.detect_provider());
  }
  if (options.name == "fake") {
    std::filesystem::path state(ctx.state_path);
    options.fake_host =
        flags.Value("fake-host").value_or((state.parent_path() / "fake-host.json").string());
    options.fake_host = std::filesystem::absolute(options.fake_host).string();
    RETURN_IF_ERROR(PrepareFakeHost(options.fake_host, gpus));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuProvider> provider, ctx.make_provider(options));
  ASSIGN_OR_RETURN(std::vector<GpuInfo> detected, provider->Query());
  if (!gpus && detected.size() > static_cast<size_t>(kMaxGpus)) {
    return absl::InvalidArgumentError(StrCat("the ", options.name, " provider reports ",
                                             detected.size(), " GPUs; at most ", kMaxGpus,
                                             " are supported (pass --gpus N)"));
  }
  int count = gpus.value_or(static_cast<int>(detected.size()));
  if (count < 1) {
    return absl::FailedPreconditionError(
        StrCat("the ", options.name, " provider found no GPUs; pass --gpus to set the count"));
  }
  if (gpus && *gpus != static_cast<int>(detected.size())) {
    std::fprintf(stderr,
                 "canhazgpu: warning: --gpus %d but the %s provider reports %zu GPUs; GPUs it "
                 "does not report will show as ERROR\n",
                 *gpus, options.name.c_str(), detected.size());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store,
                   ctx.open_store(ctx.state_path, /*create=*/true));
  int released = 0;
  bool force = flags.Has("force");
  RETURN_IF_ERROR(alloc::InitializePool(*store, {count, options.name, options.fake_host}, force,
                                        *ctx.machine, &released));
  std::printf("%s %d GPUs (IDs 0 to %d) with provider %s", force ? "Reinitialized" : "Initialized",
              count, count - 1, options.name.c_str());
  if (!options.fake_host.empty()) std::printf(" (simulated host %s)", options.fake_host.c_str());
  std::printf("\n");
  if (released > 0) std::printf("Released %d reservation(s): admin force reset\n", released);
  std::printf("State file: %s\n", ctx.state_path.c_str());
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> AdminFlags() { return kFlags; }

int AdminCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kFlags, "admin", Admin);
}

}  // namespace canhazgpu::cli
