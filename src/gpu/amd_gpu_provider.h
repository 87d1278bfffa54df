// GpuProvider for AMD GPUs through the amdgpu driver's sysfs files:
// /sys/class/drm/card*/device for identity and VRAM, and the KFD
// (/sys/class/kfd/kfd) for per-process VRAM. `sysfs_root` is "/" on a real
// host and a fixture tree in tests. Reads afresh on every Query(); no state.
#pragma once

#include <string>

#include "gpu/gpu_provider.h"

namespace canhazgpu::gpu {

class AmdGpuProvider : public GpuProvider {
 public:
  explicit AmdGpuProvider(std::string sysfs_root = "/") : root_(std::move(sysfs_root)) {}
  std::string Name() const override { return "amd"; }
  absl::StatusOr<std::vector<GpuInfo>> Query() override;

  // True when at least one amdgpu card is present under the root.
  bool HasDevices() const;

 private:
  std::string root_;
};

}  // namespace canhazgpu::gpu
