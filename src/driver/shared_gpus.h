// How a node that shares GPUs by memory (`k8shazgpu-node --gpu-sharing=memory`,
// ADR 0018) publishes them: each shareable full GPU with
// allowMultipleAllocations, a memory request policy and the memoryIsolation
// its shares get here (detected, never assumed), less the memory that local
// users' canhazgpu shares hold on it now. MIG instances are never shared.
// Pure but for the isolation probe's file reads; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "alloc/gpu_status.h"
#include "core/gpu.h"
#include "dra/devices.h"
#include "driver/host_queue.h"
#include "driver/slices.h"
#include "mps/isolation.h"

namespace canhazgpu::driver {

struct SharingOptions {
  bool enabled = false;  // --gpu-sharing=memory
  // --gpu-reserved-memory: kept back for the driver's own use (KAI#2212).
  int64_t reserved_bytes = 512 * static_cast<int64_t>(kMiB);
  // Where the isolation probe looks: the MPS control program under the
  // driver root, the dmem controller under the cgroup v2 mount.
  std::string driver_root = "/";
  std::string cgroup_root = "/sys/fs/cgroup";
};

// The device model's options for `sharing`.
dra::PoolOptions PoolOptionsFor(const SharingOptions& sharing);

// The memory local (non-Kubernetes) shares hold on GPU `gpu`, in bytes.
uint64_t LocalShareBytes(const std::vector<alloc::GpuStatus>& statuses, int gpu);

// The isolation a pod's share gets where the host offers `detected`: at most
// mps. The node cannot write a pod's dmem.max (the pod's cgroup is not known
// at prepare time), and a pod is never told a level it does not get.
mps::MemoryIsolation PodShareIsolation(mps::MemoryIsolation detected);
// The same for a published or checkpointed name ("mps-dmem" -> "mps").
std::string PodShareIsolationName(const std::string& name);

// For `devices.pool` built with PoolOptionsFor(sharing): records each shared
// GPU's memory (devices.shared), sets its memoryIsolation as a pod's share
// gets it on this host (detected, capped by PodShareIsolation: a GPU whose
// host offers dmem is marked dmem_not_applied), and takes what local shares
// hold off its published memory (value, default and range max), and so
// what the host's queue keeps for waiting local shares (`kept`,
// host_queue.h); a shared GPU with less than 1 MiB left is withheld.
void ApplySharing(NodeDevices& devices, const std::vector<GpuInfo>& gpus,
                  const std::vector<alloc::GpuStatus>& statuses, const SharingOptions& sharing,
                  const std::map<int, std::vector<QueueKeep>>& kept = {});

}  // namespace canhazgpu::driver
