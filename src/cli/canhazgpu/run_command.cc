// canhazgpu run [flags] -- CMD ARGS...: reserve, run the command with the
// GPUs visible, release the moment it ends, and exit with its status.
//
// The reservation names the command's own process (pid + start time), not
// this wrapper: the child is forked first and held at a gate until the
// reservation is committed. So any later canhazgpu call can tell whether the
// job still runs, even if this wrapper was killed with SIGKILL. Where the
// host offers a cgroup v2, the child is moved into a cgroup of its own before
// the gate opens, and the reservation names that too (docs/jobs.md).
//
// With --gpu-mem the share is enforced as the host allows before the gate
// opens (run_share.h: MPS, and dmem.max in the job's cgroup), and the line
// "memory isolation: LEVEL (...)" says which level the job really got.
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/host_mps.h"
#include "cli/canhazgpu/queue_wait.h"
#include "cli/canhazgpu/request_flags.h"
#include "cli/canhazgpu/run_share.h"
#include "cli/common/exit_code.h"
#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/gated_child.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags = RequestFlags();
  flags.push_back({.name = "timeout",
                   .short_name = 't',
                   .has_value = true,
                   .value_name = "DURATION",
                   .help = "stop the command after this long, then exit 124",
                   .kind = FlagKind::kDuration});
  flags.push_back({.name = "grace",
                   .has_value = true,
                   .value_name = "DURATION",
                   .help = "after --timeout: SIGINT, SIGTERM at half, SIGKILL at the end",
                   .kind = FlagKind::kDuration,
                   .default_value = "30s"});
  flags.push_back({.name = "no-cgroup",
                   .help = "follow the job without a cgroup even where the host offers one"});
  return flags;
}

// CUDA numbers devices by PCI bus once CUDA_DEVICE_ORDER says so, matching
// NVML's indices. ROCm applies ROCR_VISIBLE_DEVICES first and renumbers from
// 0, so HIP and CUDA variables then count within the visible set.
// A MIG instance is named by its UUID; CUDA shows the job only those.
std::vector<host::EnvEdit> GpuEnvironment(const std::string& provider, const std::vector<int>& ids,
                                          const dra::HostSelection& selection) {
  std::string list = JoinGpuIds(ids);
  if (!selection.mig_uuid.empty()) {
    return {{"CUDA_VISIBLE_DEVICES", Join(VisibleDevices(ids, selection), ",")}};
  }
  if (provider == "amd") {
    std::vector<int> renumbered;
    for (size_t i = 0; i < ids.size(); ++i) renumbered.push_back(static_cast<int>(i));
    std::string local = JoinGpuIds(renumbered);
    return {{"ROCR_VISIBLE_DEVICES", list},
            {"HIP_VISIBLE_DEVICES", local},
            {"CUDA_VISIBLE_DEVICES", local}};
  }
  return {{"CUDA_VISIBLE_DEVICES", list}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
}

// --timeout and --grace.
absl::StatusOr<host::TimeoutPolicy> ParseTimeoutPolicy(const ParsedFlags& flags) {
  host::TimeoutPolicy policy;
  if (auto t = flags.Value("timeout")) {
    ASSIGN_OR_RETURN(policy.timeout, ParseDuration(*t));
  }
  if (auto g = flags.Value("grace")) {
    ASSIGN_OR_RETURN(policy.grace, ParseDuration(*g));
  }
  return policy;
}

// What the wrapper says and records while it waits for the job on GPUs
// `ids`.
host::GatedChild::Callbacks RunJobCallbacks(Context& ctx, store::StateStore& store,
                                            const ProcessRef& job, const std::vector<int>& ids) {
  host::GatedChild::Callbacks callbacks;
  callbacks.on_timeout = [] {
    std::fprintf(stderr, "canhazgpu: timeout reached, interrupting the command\n");
  };
  callbacks.on_command_exit = [&ctx, &store, job, ids](int status) {
    std::fprintf(stderr,
                 "canhazgpu: the command exited (status %d); keeping GPU(s) %s until the "
                 "processes it started have exited\n",
                 status, JoinGpuIds(ids).c_str());
    absl::Status marked = alloc::MarkCommandExited(store, job, *ctx.machine);
    if (!marked.ok()) {
      std::fprintf(stderr, "canhazgpu: warning: %s\n", std::string(marked.message()).c_str());
    }
  };
  callbacks.on_job_processes = [&ctx, &store, job](const std::vector<ProcessRef>& processes) {
    // Recorded so that another command can tell the job still runs should
    // this wrapper be SIGKILLed (docs/jobs.md).
    absl::Status recorded = alloc::RecordJobProcesses(store, job, processes, *ctx.machine);
    if (!recorded.ok()) {
      std::fprintf(stderr, "canhazgpu: warning: %s\n", std::string(recorded.message()).c_str());
    }
  };
  return callbacks;
}

// Puts the waiting job in its own cgroup: below the admin's dmem parent for
// a share that dmem may limit (then the job runs there or not at all), else
// below our own cgroup where the host offers one. Returns the cgroup when it
// is below the dmem parent, else ""; `dmem_note` says why not.
absl::StatusOr<std::string> PlaceJobCgroup(const Context& ctx, const ParsedFlags& flags,
                                           const std::vector<GpuInfo>& gpus,
                                           host::GatedChild& child, alloc::ReserveRequest& request,
                                           std::string* dmem_note) {
  const bool allowed = !flags.Has("no-cgroup");
  const int count = std::max(request.count, static_cast<int>(request.ids.size()));
  const uint64_t start_ticks = request.process->start_ticks;
  if (std::optional<std::string> parent =
          RunShare::CgroupParent(ctx.sharing, request.memory, count, allowed, gpus, dmem_note)) {
    absl::StatusOr<std::string> cgroup = child.EnterCgroupIn(*parent, start_ticks);
    if (!cgroup.ok()) {
      return absl::FailedPreconditionError(
          StrCat("the job's share needs a cgroup for its dmem limit: ", cgroup.status().message()));
    }
    request.job_cgroup = *cgroup;
    return *cgroup;
  }
  if (allowed) {
    // A host that offers no writable cgroup v2 (cgroup v1, no delegation,
    // not root) is no error: the job is then followed as its descendants.
    absl::StatusOr<std::string> cgroup = child.EnterCgroup(start_ticks);
    if (cgroup.ok()) request.job_cgroup = *cgroup;
  }
  return std::string();
}

// What Run has made ready for the job: its reservation, and how its share
// (if any) is enforced.
struct ReadyJob {
  ProcessRef job;
  std::vector<int> ids;
  std::optional<RunShare> share;
};

// Once the reservation is made and its share enforced: says the isolation,
// starts the job, waits for it and releases what it held.
absl::StatusOr<int> RunJob(Context& ctx, const ParsedFlags& flags, store::StateStore& store,
                           const std::vector<host::EnvEdit>& gpu_env, host::GatedChild& child,
                           ReadyJob& ready, const host::TimeoutPolicy& policy) {
  std::vector<host::EnvEdit> environment = gpu_env;
  if (ready.share) {
    std::fprintf(stderr, "canhazgpu: %s\n", ready.share->Line().c_str());
    for (host::EnvEdit& e : ready.share->Environment()) environment.push_back(std::move(e));
  }
  absl::Status started = child.Start(environment);
  absl::StatusOr<int> exit_status = 0;
  if (!started.ok()) {
    std::fprintf(
        stderr, "canhazgpu: cannot run %s: %s\n", flags.rest[0].c_str(),
        absl::IsNotFound(started) ? "command not found" : std::string(started.message()).c_str());
    exit_status = absl::IsNotFound(started) ? 127 : 126;
  } else {
    exit_status = child.Wait(policy, RunJobCallbacks(ctx, store, ready.job, ready.ids));
    // Whatever the job died of, scripts tell a timeout by 124, as timeout(1).
    if (exit_status.ok() && child.timed_out()) exit_status = kExitTimedOut;
  }
  // Release even when waiting failed: the job is gone or will be reaped.
  absl::Status released = alloc::ReleaseJob(store, ready.job, *ctx.machine);
  if (!released.ok()) {
    std::fprintf(stderr, "canhazgpu: warning: %s; the GPUs return when the next command runs\n",
                 std::string(released.message()).c_str());
  }
  if (ready.share) ready.share->Release();
  return exit_status;
}

absl::Status CheckRunArguments(const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(StrCat(
        "missing '--' before the command: canhazgpu run [flags] -- ", Join(flags.positional, " ")));
  }
  if (!flags.saw_separator || flags.rest.empty()) {
    return absl::InvalidArgumentError(
        "no command given: canhazgpu run [flags] -- COMMAND [ARGS...]");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Run(Context& ctx, const ParsedFlags& flags) {
  RETURN_IF_ERROR(CheckRunArguments(flags));
  dra::DeviceWants wants;
  ASSIGN_OR_RETURN(alloc::ReserveRequest request, ParseRequestFlags(flags, &wants));
  ASSIGN_OR_RETURN(host::TimeoutPolicy policy, ParseTimeoutPolicy(flags));
  ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> store, ctx.open_store(ctx.state_path, false));
  ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
  // What a killed wrapper of this user left under MPS goes first.
  RecoverOwnMps(ctx, *store);
  ASSIGN_OR_RETURN(std::vector<GpuInfo> gpus, QueryGpusOrFail(ctx, pool));
  ASSIGN_OR_RETURN(dra::HostSelection selection, SelectDevices(gpus, wants, &request));

  ASSIGN_OR_RETURN(host::GatedChild child, host::GatedChild::Fork(flags.rest));
  std::optional<host::ProcessInfo> info = ctx.machine->processes.Find(child.pid());
  std::optional<host::ProcessInfo> self = ctx.machine->processes.Find(getpid());
  if (!info || !self) return absl::InternalError("cannot read the job's /proc entry");
  ReadyJob ready{.job = ProcessRef{child.pid(), info->start_ticks}};
  request.kind = ReservationKind::kRun;
  request.process = ready.job;
  request.wrapper = ProcessRef{self->pid, self->start_ticks};
  request.command = Join(flags.rest, " ");
  request.threshold_bytes = ctx.threshold_bytes;
  std::string dmem_note;
  absl::StatusOr<std::string> dmem_cgroup =
      PlaceJobCgroup(ctx, flags, gpus, child, request, &dmem_note);
  if (!dmem_cgroup.ok()) {
    child.Abort();
    return dmem_cgroup.status();
  }
  absl::StatusOr<std::vector<int>> ids = AcquireWithQueue(ctx, *store, pool, request, flags, gpus);
  if (!ids.ok()) {
    child.Abort();
    return ids.status();
  }
  ready.ids = *ids;
  std::fprintf(
      stderr, "canhazgpu: reserved %s%zu GPU(s): %s for command execution%s\n",
      request.memory > 0 ? StrCat(store::FormatBytes(request.memory), " of each of ").c_str() : "",
      ids->size(), JoinGpuIds(*ids).c_str(),
      policy.timeout ? StrCat(" (timeout ", FormatDuration(*policy.timeout), ")").c_str() : "");
  if (request.memory > 0) {
    absl::StatusOr<RunShare> share =
        RunShare::Enforce(ctx, *store, ready.job, gpus, *dmem_cgroup, dmem_note);
    if (!share.ok()) {
      // The job never runs with less isolation than the host offers.
      child.Abort();
      alloc::ReleaseJob(*store, ready.job, *ctx.machine).IgnoreError();
      return absl::FailedPreconditionError(
          StrCat("the share is not started: ", share.status().message()));
    }
    ready.share = *std::move(share);
  }
  return RunJob(ctx, flags, *store, GpuEnvironment(pool.provider, *ids, selection), child, ready,
                policy);
}

}  // namespace

std::vector<FlagSpec> RunFlags() { return Flags(); }

int RunCommand(Context& ctx, const Args& args) {
  absl::StatusOr<ParsedFlags> flags = ParseCommandFlags(args, Flags(), "run", ctx);
  if (!flags.ok()) return Fail(flags.status());
  absl::StatusOr<int> status = Run(ctx, *flags);
  return status.ok() ? *status : Fail(status.status());
}

}  // namespace canhazgpu::cli
