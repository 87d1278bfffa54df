// What a GPU provider reports about one GPU: typed attributes, memory and the
// processes using it. Plain values; no I/O. Memory is in bytes throughout;
// front-ends convert to MiB for display.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canhazgpu {

inline constexpr uint64_t kMiB = 1024 * 1024;

struct GpuProcess {
  int64_t pid = 0;
  uint64_t used_memory_bytes = 0;
};

enum class MigMode { kUnsupported, kDisabled, kEnabled };

std::string_view MigModeName(MigMode mode);

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
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
  std::vector<GpuProcess> processes;
  // Non-empty when the provider could not read this GPU; such a GPU is shown
  // as ERROR and never handed out.
  std::string error;
};

}  // namespace canhazgpu
