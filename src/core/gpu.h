// What a GPU provider reports about one GPU: typed attributes, memory and the
// processes using it. Plain values; no I/O. Memory is in bytes throughout;
// front-ends convert to MiB for display.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canhazgpu {

inline constexpr uint64_t kMiB = 1024 * 1024;

// The most GPUs one pool (one host) may have. Larger pools are refused
// everywhere a count enters (admin --gpus, a provider's report, a simulated
// host file), so no command loops over billions of ids.
inline constexpr int kMaxGpus = 1024;

struct GpuProcess {
  int64_t pid = 0;
  uint64_t used_memory_bytes = 0;
};

enum class MigMode { kUnsupported, kDisabled, kEnabled };

// One MIG (GPU instance) partition of a GPU in MIG mode.
struct MigInstance {
  std::string uuid;         // "MIG-..."
  std::string profile;      // "1g.10gb"
  int profile_id = 0;       // NVML GPU instance profile id (19 for A100 1g.5gb)
  int placement_start = 0;  // first memory slice
  int placement_size = 1;   // memory slices used
  uint64_t memory_bytes = 0;
  // NVML's ids of the instance's GPU instance and compute instance: with the
  // GPU's minor they name its capability device nodes (MigCapabilityNodes).
  // -1: unknown.
  int gpu_instance_id = -1;
  int compute_instance_id = -1;
};

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string product_name;        // "NVIDIA H100 80GB HBM3"
  std::string brand;               // "NVIDIA", "AMD"
  std::string pci_bus_id;          // "0000:1b:00.0"
  std::string architecture;        // "Hopper"
  std::string compute_capability;  // "9.0"; empty when not applicable
  std::string driver_version;
  std::string cuda_driver_version;  // "12.4"; empty for AMD
  MigMode mig_mode = MigMode::kUnsupported;
  int minor = -1;             // /dev/nvidiaN; -1 when unknown (the index stands in)
  std::string pcie_root;      // "pci0000:00", the PCIe root complex, where known
  int mig_memory_slices = 0;  // memory slices a MIG-capable GPU divides into (8 on A100/H100)
  std::vector<MigInstance> mig_instances;  // when mig_mode is kEnabled
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
  std::vector<GpuProcess> processes;
  // Non-empty when the provider could not read this GPU; such a GPU is shown
  // as ERROR and never handed out.
  std::string error;
};

}  // namespace canhazgpu
