// What `canhazgpu run --gpu-mem` does to enforce its job's share, around
// the job's life (docs/sharing.md, "On a host"):
//
//   before the reservation  CgroupParent(): where the job's cgroup is made -
//                           below the admin's dmem-cgroup when it is usable,
//                           so that the share can become its dmem.max;
//   after the reservation   Enforce(): chooses the level (share_isolation.h),
//                           acquires the share from the user's MPS daemon of
//                           the GPU (host_mps.h) and writes dmem.max, all
//                           before the job may run; an error means the job
//                           must not start (never a silently lower level);
//   the job's environment   Environment(): CANHAZGPU_GPU_MEM,
//                           CANHAZGPU_GPU_MEM_TOTAL, CANHAZGPU_MEMORY_ISOLATION
//                           (as pods get them) and MPS's variables;
//   after the job           Release(): the share leaves its MPS daemon, the
//                           GPU's last stops it. (The job's cgroup goes with
//                           the job, host/gated_child.h.)
// Thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/canhazgpu/context.h"
#include "cli/canhazgpu/host_mps.h"
#include "cli/canhazgpu/share_isolation.h"
#include "host/gated_child.h"

namespace canhazgpu::cli {

class RunShare {
 public:
  // The parent the job's cgroup is made in when it is the admin's dmem
  // parent; nullopt for the usual place. Only for a share on one GPU with
  // share-isolation auto and a cgroup allowed (`cgroup_allowed`: no
  // --no-cgroup). `dmem_note` gets why not, for the line.
  static std::optional<std::string> CgroupParent(const HostSharing& sharing, uint64_t memory,
                                                 int count, bool cgroup_allowed,
                                                 const std::vector<GpuInfo>& gpus,
                                                 std::string* dmem_note);

  // Enforces the shares the store holds for `job`. `dmem_job_cgroup`: the
  // job's cgroup when it was made below the dmem parent, else empty.
  static absl::StatusOr<RunShare> Enforce(const Context& ctx, store::StateStore& store,
                                          const ProcessRef& job, const std::vector<GpuInfo>& gpus,
                                          const std::string& dmem_job_cgroup,
                                          const std::string& dmem_note);

  RunShare(RunShare&&) = default;
  RunShare& operator=(RunShare&&) = default;
  ~RunShare() = default;

  std::vector<host::EnvEdit> Environment() const;
  // The isolation line, without "canhazgpu: " and newline.
  std::string Line() const { return IsolationLine(choice_, shares_); }
  mps::MemoryIsolation level() const { return choice_.level; }

  // Gives the MPS share back (after the job); a failure is a warning.
  void Release();

 private:
  RunShare() = default;

  std::vector<JobShare> shares_;
  IsolationChoice choice_;
  std::unique_ptr<HostMps> mps_;  // set while an MPS share is held
  std::vector<mps::EnvVar> mps_env_;
};

}  // namespace canhazgpu::cli
