#include "cli/canhazgpu/share_isolation.h"

#include <unistd.h>

#include <algorithm>

#include "core/file_read.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "mps/share_limits.h"
#include "store/share_check.h"

namespace canhazgpu::cli {
namespace {

bool ListsDmem(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, 4096, "cgroup controllers");
  if (!text.ok()) return false;
  for (std::string_view word : Split(Trim(*text), ' ', /*skip_empty=*/true)) {
    if (word == "dmem") return true;
  }
  return false;
}

const GpuInfo* GpuByIndex(const std::vector<GpuInfo>& gpus, int index) {
  for (const GpuInfo& g : gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

std::string ShareGpus(const std::vector<JobShare>& shares) {
  std::vector<int> ids;
  for (const JobShare& s : shares) ids.push_back(s.gpu);
  return StrCat(shares.size() == 1 ? "GPU " : "GPUs ", JoinGpuIds(ids));
}

}  // namespace

absl::StatusOr<std::vector<JobShare>> ReadJobShares(store::StateStore& store, const ProcessRef& job,
                                                    const std::vector<GpuInfo>& gpus) {
  std::vector<Reservation> reservations;
  RETURN_IF_ERROR(store.Read([&](store::StateTransaction& txn) -> absl::Status {
    ASSIGN_OR_RETURN(reservations, txn.ListReservations());
    return absl::OkStatus();
  }));
  std::vector<JobShare> shares;
  for (const Reservation& r : reservations) {
    if (!r.IsShare() || r.kind != ReservationKind::kRun || r.process != job) continue;
    const GpuInfo* gpu = GpuByIndex(gpus, r.gpu);
    if (gpu == nullptr) {
      return absl::InternalError(StrCat("gpu ", r.gpu, " of the job's share is not on this host"));
    }
    shares.push_back({.gpu = r.gpu,
                      .gpu_uuid = gpu->uuid,
                      .pci_bus_id = gpu->pci_bus_id,
                      .cuda_driver_version = gpu->cuda_driver_version,
                      .share_id = r.share,
                      .bytes = r.memory,
                      .shareable = r.shareable,
                      .total = gpu->memory_total_bytes});
  }
  std::sort(shares.begin(), shares.end(),
            [](const JobShare& a, const JobShare& b) { return a.gpu < b.gpu; });
  return shares;
}

std::string DmemParentProblem(const HostSharing& sharing, const std::vector<GpuInfo>& gpus) {
  if (sharing.dmem_cgroup.empty()) return "no dmem-cgroup is set";
  if (access(mps::ControlProgramPath(sharing.driver_root).c_str(), X_OK) != 0) {
    return StrCat("no ", mps::ControlProgramPath(sharing.driver_root));
  }
  if (!mps::HasDmemController(sharing.cgroup_root)) {
    return StrCat(sharing.cgroup_root, " offers no dmem controller");
  }
  const std::string subtree = StrCat(sharing.dmem_cgroup, "/cgroup.subtree_control");
  if (!ListsDmem(subtree)) return StrCat("dmem is not in ", subtree);
  const bool cuda = std::any_of(gpus.begin(), gpus.end(), [](const GpuInfo& g) {
    return mps::CudaVersionAtLeast(g.cuda_driver_version, 13, 4);
  });
  if (!cuda) return "the driver's CUDA is older than 13.4";
  return "";
}

IsolationChoice ChooseIsolation(const HostSharing& sharing, const std::vector<JobShare>& shares,
                                bool in_dmem_cgroup, const std::string& dmem_note) {
  using mps::MemoryIsolation;
  if (shares.empty()) return {MemoryIsolation::kNone, "the job holds no share"};
  if (!sharing.enforce) return {MemoryIsolation::kNone, "share-isolation is none here"};
  if (shares.size() > 1) {
    return {MemoryIsolation::kNone,
            StrCat("MPS limits a process on one GPU, and this job has shares of ", shares.size())};
  }
  const JobShare& share = shares.front();
  const mps::IsolationProbe probe{.driver_root = sharing.driver_root,
                                  .cgroup_root = sharing.cgroup_root,
                                  .cuda_driver_version = share.cuda_driver_version};
  const MemoryIsolation detected = mps::DetectIsolation(probe, share.pci_bus_id);
  if (detected == MemoryIsolation::kNone) {
    return {MemoryIsolation::kNone, StrCat("no ", mps::ControlProgramPath(sharing.driver_root))};
  }
  if (detected == MemoryIsolation::kMpsDmem && in_dmem_cgroup) {
    return {MemoryIsolation::kMpsDmem, ""};
  }
  // MPS alone: say why not dmem where dmem was in question.
  if (in_dmem_cgroup) {
    return {MemoryIsolation::kMps, StrCat("no dmem: ", sharing.cgroup_root,
                                          "/dmem.capacity has no region for GPU ", share.gpu)};
  }
  if (detected == MemoryIsolation::kMpsDmem || !sharing.dmem_cgroup.empty()) {
    return {MemoryIsolation::kMps, StrCat("no dmem: ", dmem_note)};
  }
  return {MemoryIsolation::kMps, ""};
}

std::string IsolationLine(const IsolationChoice& choice, const std::vector<JobShare>& shares) {
  const std::string size = shares.empty() ? "" : store::FormatBytes(shares.front().bytes);
  const std::string note = choice.note.empty() ? "" : StrCat("; ", choice.note);
  switch (choice.level) {
    case mps::MemoryIsolation::kMpsDmem:
      return StrCat("memory isolation: mps-dmem (the job's cgroup limited to ", size, " of ",
                    ShareGpus(shares), " by the kernel's dmem.max, each process by MPS",
                    "; see docs/sharing.md)");
    case mps::MemoryIsolation::kMps:
      return StrCat("memory isolation: mps (each process limited to ", size, " of ",
                    ShareGpus(shares), " by MPS", note, "; see docs/sharing.md)");
    case mps::MemoryIsolation::kNone:
      break;
  }
  return StrCat("memory isolation: none (the share is booked, not enforced", note,
                "; the job is told CANHAZGPU_GPU_MEM)");
}

std::string ReservationIsolation(const HostSharing& sharing, const std::vector<GpuInfo>& gpus,
                                 const std::vector<int>& ids) {
  std::string line = "memory isolation: none, the share is booked, not enforced";
  const GpuInfo* gpu = ids.size() == 1 ? GpuByIndex(gpus, ids.front()) : nullptr;
  if (gpu == nullptr || !sharing.enforce) return line;
  const mps::IsolationProbe probe{.driver_root = sharing.driver_root,
                                  .cgroup_root = sharing.cgroup_root,
                                  .cuda_driver_version = gpu->cuda_driver_version};
  if (mps::DetectIsolation(probe, gpu->pci_bus_id) == mps::MemoryIsolation::kNone) return line;
  return StrCat(line, "; for MPS limits run the job with canhazgpu run --gpu-mem");
}

}  // namespace canhazgpu::cli
