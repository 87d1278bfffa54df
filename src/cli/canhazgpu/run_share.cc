#include "cli/canhazgpu/run_share.h"

#include <cstdio>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {

std::optional<std::string> RunShare::CgroupParent(const HostSharing& sharing, uint64_t memory,
                                                  int count, bool cgroup_allowed,
                                                  const std::vector<GpuInfo>& gpus,
                                                  std::string* dmem_note) {
  if (memory == 0 || !sharing.enforce || count != 1) return std::nullopt;
  if (!cgroup_allowed) {
    *dmem_note = "--no-cgroup";
    return std::nullopt;
  }
  *dmem_note = DmemParentProblem(sharing, gpus);
  if (!dmem_note->empty()) return std::nullopt;
  return sharing.dmem_cgroup;
}

absl::StatusOr<RunShare> RunShare::Enforce(const Context& ctx, store::StateStore& store,
                                           const ProcessRef& job, const std::vector<GpuInfo>& gpus,
                                           const std::string& dmem_job_cgroup,
                                           const std::string& dmem_note) {
  RunShare run;
  ASSIGN_OR_RETURN(run.shares_, ReadJobShares(store, job, gpus));
  run.choice_ = ChooseIsolation(ctx.sharing, run.shares_, !dmem_job_cgroup.empty(), dmem_note);
  if (run.choice_.level == mps::MemoryIsolation::kNone) return run;
  const JobShare& share = run.shares_.front();
  ASSIGN_OR_RETURN(run.mps_,
                   HostMps::Open(ctx.sharing, ctx.caller.uid, *ctx.machine, /*create=*/true));
  absl::StatusOr<std::vector<mps::EnvVar>> env =
      run.mps_->Acquire({.gpu_uuid = share.gpu_uuid,
                         .share_id = share.share_id,
                         .share_bytes = share.bytes,
                         .shareable_bytes = share.shareable});
  if (!env.ok()) {
    run.mps_.reset();
    return env.status();
  }
  run.mps_env_ = *std::move(env);
  if (run.choice_.level == mps::MemoryIsolation::kMpsDmem) {
    absl::Status limited = mps::WriteDmemMax(ctx.sharing.cgroup_root, dmem_job_cgroup,
                                             share.gpu_uuid, share.pci_bus_id, share.bytes);
    if (!limited.ok()) {
      run.Release();
      return limited;
    }
  }
  return run;
}

std::vector<host::EnvEdit> RunShare::Environment() const {
  std::vector<host::EnvEdit> env;
  if (shares_.empty()) return env;
  // The share's size (the first: every share of a run is the same size),
  // its GPU's and the isolation, as a pod's containers get them.
  env.push_back({"CANHAZGPU_GPU_MEM", std::to_string(shares_.front().bytes)});
  if (shares_.front().total > 0) {
    env.push_back({"CANHAZGPU_GPU_MEM_TOTAL", std::to_string(shares_.front().total)});
  }
  env.push_back(
      {"CANHAZGPU_MEMORY_ISOLATION", std::string(mps::MemoryIsolationName(choice_.level))});
  for (const mps::EnvVar& e : mps_env_) env.push_back({e.name, e.value});
  return env;
}

void RunShare::Release() {
  if (mps_ == nullptr) return;
  for (const JobShare& share : shares_) {
    absl::Status released = mps_->Release(share.share_id);
    if (!released.ok()) {
      std::fprintf(stderr, "canhazgpu: warning: %s\n", std::string(released.message()).c_str());
    }
  }
  mps_.reset();
  mps_env_.clear();
}

}  // namespace canhazgpu::cli
