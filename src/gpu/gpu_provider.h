// The GPU inventory seam. A GpuProvider reports every GPU of the host with
// its attributes, memory and the processes using it. Implementations:
// NvmlGpuProvider (libnvidia-ml loaded with dlopen), AmdGpuProvider (amdgpu
// sysfs) and FakeGpuProvider (a simulated host in a JSON file). Query() reads
// the hardware afresh on every call. Providers are not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gpu.h"

namespace canhazgpu::gpu {

class GpuProvider {
 public:
  virtual ~GpuProvider() = default;

  // "nvidia", "amd" or "fake": the name `admin --provider` takes.
  virtual std::string Name() const = 0;

  // Every GPU, ordered by index (0..n-1). A GPU that cannot be read is
  // returned with GpuInfo::error set; a failure of the whole provider (driver
  // gone, file unreadable) is an error status.
  virtual absl::StatusOr<std::vector<GpuInfo>> Query() = 0;
};

}  // namespace canhazgpu::gpu
