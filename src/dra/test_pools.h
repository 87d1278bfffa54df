// Device pools for the dra tests and benchmarks: simulated GPUs, some in
// MIG mode, turned into devices by the same BuildDevicePool() the host uses.
#pragma once

#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/strings.h"
#include "dra/devices.h"

namespace canhazgpu::dra::testing {

inline GpuInfo TestGpu(int index, std::string product = "NVIDIA A100-SXM4-40GB",
                       uint64_t mib = 40960) {
  GpuInfo g;
  g.index = index;
  g.minor = index;
  g.uuid = StrCat("GPU-0000000", index);
  g.product_name = std::move(product);
  g.brand = "NVIDIA";
  g.architecture = "Ampere";
  g.compute_capability = "8.0";
  g.driver_version = "535.104.05";
  g.cuda_driver_version = "12.2";
  g.pci_bus_id = StrCat("0000:", 10 + index, ":00.0");
  g.pcie_root = StrCat("pci0000:", index / 2);  // two GPUs per root complex
  g.memory_total_bytes = mib * kMiB;
  g.mig_mode = MigMode::kDisabled;
  g.mig_memory_slices = 8;
  return g;
}

// A100 40GB in MIG mode with 1g.5gb at slice 0, 1g.5gb at 1, 3g.20gb at 4
// (GPU instances 7, 8 and 2, each with compute instance 0).
inline GpuInfo TestMigGpu(int index) {
  GpuInfo g = TestGpu(index);
  g.mig_mode = MigMode::kEnabled;
  g.mig_instances = {{StrCat("MIG-", index, "-a"), "1g.5gb", 19, 0, 1, 4864 * kMiB, 7, 0},
                     {StrCat("MIG-", index, "-b"), "1g.5gb", 19, 1, 1, 4864 * kMiB, 8, 0},
                     {StrCat("MIG-", index, "-c"), "3g.20gb", 9, 4, 4, 19968 * kMiB, 2, 0}};
  return g;
}

// `roots` PCIe root complexes per node, GPUs spread evenly over them.
inline std::vector<DevicePool> TestNodes(int nodes, int gpus_per_node, int roots = 2) {
  std::vector<DevicePool> pools;
  for (int n = 0; n < nodes; ++n) {
    std::vector<GpuInfo> gpus;
    for (int i = 0; i < gpus_per_node; ++i) {
      gpus.push_back(TestGpu(i));
      gpus.back().pcie_root = StrCat("pci0000:", i * roots / gpus_per_node);
    }
    pools.push_back(BuildDevicePool(gpus, StrCat("node-", n)));
  }
  return pools;
}

inline const char* kGpuClassSelector =
    "device.driver == 'gpu.canhazgpu.dev' && device.attributes['gpu.canhazgpu.dev'].type == 'gpu'";
inline const char* kMigClassSelector =
    "device.driver == 'gpu.canhazgpu.dev' && device.attributes['gpu.canhazgpu.dev'].type == 'mig'";

}  // namespace canhazgpu::dra::testing
