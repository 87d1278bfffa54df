// Which memory isolation a `canhazgpu run --gpu-mem` job gets on this host,
// and the line that says so (docs/sharing.md, "On a host"). Detected per GPU
// with mps::DetectIsolation from the settings (driver-root, cgroup-root),
// never assumed:
//
//   none      share-isolation is none; or the job has shares on several
//             GPUs (a process has one MPS pipe directory, so MPS would limit
//             it on one of them only); or no MPS control program.
//   mps       the GPU's MPS daemon of the user (host_mps.h) limits each
//             process of the job through its environment.
//   mps-dmem  mps, and the job's cgroup, made under the admin's dmem-cgroup,
//             has the share as dmem.max: only where that parent is usable
//             (DmemParentProblem) and DetectIsolation says mps-dmem.
//
// Reads files only (the detection); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/canhazgpu/context.h"
#include "core/gpu.h"
#include "core/reservation.h"
#include "mps/isolation.h"
#include "store/state_store.h"

namespace canhazgpu::cli {

// One share of a run's job, with what enforcing it needs of its GPU.
struct JobShare {
  int gpu = 0;
  std::string gpu_uuid;
  std::string pci_bus_id;
  std::string cuda_driver_version;
  std::string share_id;
  uint64_t bytes = 0;      // the share
  uint64_t shareable = 0;  // what the GPU's shares may hold together
  uint64_t total = 0;      // the GPU's memory
};

// The shares the store holds for the run job `job`, by GPU, each with its
// GPU's identity from `gpus`. Internal when a GPU is not in `gpus`.
absl::StatusOr<std::vector<JobShare>> ReadJobShares(store::StateStore& store, const ProcessRef& job,
                                                    const std::vector<GpuInfo>& gpus);

// Why the admin's dmem parent cannot take a job's cgroup now ("" when it
// can): not configured, no MPS, no dmem controller at the cgroup root, dmem
// missing from the parent's cgroup.subtree_control, or no GPU whose CUDA is
// 13.4 or later.
std::string DmemParentProblem(const HostSharing& sharing, const std::vector<GpuInfo>& gpus);

struct IsolationChoice {
  mps::MemoryIsolation level = mps::MemoryIsolation::kNone;
  // Why not more, for the line: "no /usr/bin/nvidia-cuda-mps-control".
  std::string note;
};

// The level the job gets. `in_dmem_cgroup`: its cgroup is below the dmem
// parent; `dmem_note`: why it is not, when dmem was a question at all.
IsolationChoice ChooseIsolation(const HostSharing& sharing, const std::vector<JobShare>& shares,
                                bool in_dmem_cgroup, const std::string& dmem_note);

// "memory isolation: mps (each process limited to 10Gi of GPU 0 by MPS; see
// docs/sharing.md)", without a newline.
std::string IsolationLine(const IsolationChoice& choice, const std::vector<JobShare>& shares);

// For `reserve --gpu-mem` on GPUs `ids`: a reservation has no process to
// start under MPS, so its level is none, said plainly, with what the user
// can do where `run` would enforce the share here ("memory isolation: none,
// the share is booked, not enforced; ...").
std::string ReservationIsolation(const HostSharing& sharing, const std::vector<GpuInfo>& gpus,
                                 const std::vector<int>& ids);

}  // namespace canhazgpu::cli
