// Which memory isolation a host offers a GPU share, detected, never assumed
// (docs/sharing.md): each shareable GPU publishes it and both CLIs print it.
//
//   mps-dmem  MPS, and NVIDIA's MPS v3 memory partitioning: cgroup v2 with the
//             `dmem` controller, a driver of CUDA 13.4 or later, and the
//             GPU's region in dmem.capacity. A share's cgroup gets dmem.max,
//             a limit the kernel enforces at allocation time.
//   mps       the MPS control program is under the driver root: a share's
//             processes get MPS's per-client limits (share_limits.h).
//   none      neither: a share is booked, nothing limits it.
//
// The cgroup v2 dmem interface (kernel Documentation/admin-guide/cgroup-v2.rst):
// the root's dmem.capacity lists one "<region> <bytes>" line per device
// memory region ("nvidia/0000:01:00.0/vidmem", "drm/0000:03:00.0/vram0");
// every other cgroup has dmem.max, nested-keyed "<region> <bytes|max>"
// lines, where writing one line sets that region's limit. Everything here
// reads and writes files under roots the caller names (tests use a temp
// tree). Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::mps {

enum class MemoryIsolation { kNone, kMps, kMpsDmem };

// "none", "mps", "mps-dmem": the published attribute's values.
std::string_view MemoryIsolationName(MemoryIsolation isolation);
std::optional<MemoryIsolation> ParseMemoryIsolation(std::string_view name);

struct IsolationProbe {
  std::string driver_root = "/";               // MPS: <root>/usr/bin/nvidia-cuda-mps-control
  std::string cgroup_root = "/sys/fs/cgroup";  // the cgroup v2 mount
  std::string cuda_driver_version;             // "13.4", as the GPU provider reports it
};

// True when `version` ("13.4", "13.10", "14.0") is at least major.minor.
bool CudaVersionAtLeast(std::string_view version, int major, int minor);

// True when `cgroup_root` is a cgroup v2 mount offering the dmem controller
// (its cgroup.controllers lists "dmem").
bool HasDmemController(const std::string& cgroup_root);

// The isolation a share of the GPU at `pci_bus_id` ("00000000:1b:00.0" as
// NVML says, or "0000:1b:00.0") gets on this host.
MemoryIsolation DetectIsolation(const IsolationProbe& probe, std::string_view pci_bus_id);

// The dmem region of the GPU at `pci_bus_id`, from `cgroup_root`/dmem.capacity:
// the region with the GPU's PCI address as a path component, its "vidmem"
// region when it has several (else the largest). NotFound naming the GPU
// (`gpu_uuid`) when there is none.
absl::StatusOr<std::string> DmemRegion(const std::string& cgroup_root, std::string_view gpu_uuid,
                                       std::string_view pci_bus_id);

// Writes the share's hard limit, "<region> <bytes>", into `job_cgroup`/dmem.max.
// FailedPrecondition when the job's cgroup has no dmem.max (dmem is not in
// its parent's cgroup.subtree_control); errors name the GPU and the file.
absl::Status WriteDmemMax(const std::string& cgroup_root, const std::string& job_cgroup,
                          std::string_view gpu_uuid, std::string_view pci_bus_id, uint64_t bytes);

}  // namespace canhazgpu::mps
