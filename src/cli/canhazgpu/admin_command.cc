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

const std::vector<FlagSpec> kAdminFlags = {
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
    {.name = "force", .help = "reinitialize, ending every reservation but those of pods"},
    {.name = "drop-pod-reservations",
     .help = "with --force: end the reservations of Kubernetes pods too, under their running "
             "containers"},
};

// What `admin` will do, decided before anything is created: a rejected
// command leaves nothing behind.
struct AdminPlan {
  ProviderOptions provider;
  int count = 0;
  bool force = false;
  alloc::PodReservations pods = alloc::PodReservations::kRefuse;
  // The simulated host file is missing and is written with `count` idle
  // GPUs once the pool may be initialized.
  bool write_fake_host = false;
  // Said once the pool is initialized (a rejected command says only why).
  std::string warning;
};

absl::StatusOr<AdminPlan> Plan(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty() || flags.saw_separator) {
    return absl::InvalidArgumentError(StrCat("unexpected argument '",
                                             flags.positional.empty() ? "--" : flags.positional[0],
                                             "' for 'admin'"));
  }
  std::optional<int> gpus;
  if (auto v = flags.Value("gpus")) {
    ASSIGN_OR_RETURN(gpus, PositiveInt("gpus", *v));
  }
  AdminPlan plan{.force = flags.Has("force")};
  if (flags.Has("drop-pod-reservations")) {
    if (!plan.force) return absl::InvalidArgumentError("--drop-pod-reservations needs --force");
    plan.pods = alloc::PodReservations::kDrop;
  }
  ProviderOptions& options = plan.provider;
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
    plan.write_fake_host = !std::filesystem::exists(options.fake_host);
    if (plan.write_fake_host && !gpus) {
      return absl::InvalidArgumentError(
          StrCat("--gpus is required to create the simulated host ", options.fake_host));
    }
  }
  // A simulated host not written yet will have exactly --gpus GPUs.
  size_t detected = plan.write_fake_host ? static_cast<size_t>(*gpus) : 0;
  if (!plan.write_fake_host) {
    ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuProvider> provider, ctx.make_provider(options));
    ASSIGN_OR_RETURN(std::vector<GpuInfo> found, provider->Query());
    detected = found.size();
  }
  if (!gpus && detected > static_cast<size_t>(kMaxGpus)) {
    return absl::InvalidArgumentError(StrCat("the ", options.name, " provider reports ", detected,
                                             " GPUs; at most ", kMaxGpus,
                                             " are supported (pass --gpus N)"));
  }
  plan.count = gpus.value_or(static_cast<int>(detected));
  if (plan.count < 1) {
    return absl::FailedPreconditionError(
        StrCat("the ", options.name, " provider found no GPUs; pass --gpus to set the count"));
  }
  if (gpus && *gpus != static_cast<int>(detected)) {
    plan.warning = StrCat("--gpus ", *gpus, " but the ", options.name, " provider reports ",
                          detected, " GPUs; GPUs it does not report will show as ERROR");
  }
  return plan;
}

// Initializes the pool in the open `store`: refuses an initialized one
// without --force before writing the simulated host, and removes that file
// again when the pool could not be written.
absl::Status Initialize(Context& ctx, store::StateStore& store, const AdminPlan& plan,
                        int* released) {
  std::optional<PoolConfig> existing;
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    absl::StatusOr<std::optional<PoolConfig>> read = txn.GetPool();
    // A pool the store refuses to load (over kMaxGpus, from before that
    // bound) exists; --force is the way out its message names.
    if (!read.ok() && !(plan.force && absl::IsFailedPrecondition(read.status()))) {
      return read.status();
    }
    if (read.ok()) {
      existing = *read;
    } else {
      existing = PoolConfig{};
    }
    return absl::OkStatus();
  }));
  const PoolConfig pool{plan.count, plan.provider.name, plan.provider.fake_host};
  if (existing && !plan.force) {
    // InitializePool says so, with the existing pool's numbers.
    return alloc::InitializePool(store, pool, false, *ctx.machine);
  }
  if (plan.write_fake_host) RETURN_IF_ERROR(gpu::WriteDefaultFakeHost(pool.fake_host, plan.count));
  absl::Status status =
      alloc::InitializePool(store, pool, plan.force, *ctx.machine, released, plan.pods);
  if (!status.ok() && plan.write_fake_host) {
    std::error_code ec;
    std::filesystem::remove(pool.fake_host, ec);
  }
  return status;
}

absl::Status Admin(Context& ctx, const ParsedFlags& flags) {
  ASSIGN_OR_RETURN(AdminPlan plan, Plan(ctx, flags));
  // What admin is about to create, so that a failure removes it again.
  const std::string& path = ctx.state_path;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  std::vector<std::string> new_files;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::string file = path + suffix;
    if (std::filesystem::symlink_status(file, ec).type() == std::filesystem::file_type::not_found) {
      new_files.push_back(file);
    }
  }
  const bool had_dir = dir.empty() || std::filesystem::exists(dir, ec);
  int released = 0;
  absl::Status status;
  {
    absl::StatusOr<std::unique_ptr<store::StateStore>> store =
        ctx.open_store(path, /*create=*/true);
    status = store.ok() ? Initialize(ctx, **store, plan, &released) : store.status();
  }
  if (!status.ok()) {
    for (const std::string& file : new_files) std::filesystem::remove(file, ec);
    if (!had_dir) std::filesystem::remove(dir, ec);  // only when empty
    return status;
  }
  if (!plan.warning.empty()) std::fprintf(stderr, "canhazgpu: warning: %s\n", plan.warning.c_str());
  const ProviderOptions& options = plan.provider;
  std::printf("%s %d GPUs (IDs 0 to %d) with provider %s",
              plan.force ? "Reinitialized" : "Initialized", plan.count, plan.count - 1,
              options.name.c_str());
  if (!options.fake_host.empty()) std::printf(" (simulated host %s)", options.fake_host.c_str());
  std::printf("\n");
  if (released > 0) std::printf("Released %d reservation(s): admin force reset\n", released);
  std::printf("State file: %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

std::vector<FlagSpec> AdminFlags() { return kAdminFlags; }

int AdminCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, kAdminFlags, "admin", Admin);
}

}  // namespace canhazgpu::cli
