// GpuProvider over NVML, loaded at run time with dlopen so that one binary
// runs on hosts with and without the NVIDIA driver. The library path is
// "libnvidia-ml.so.1" unless CANHAZGPU_NVML_LIBRARY names another (the main
// program reads the variable; this class takes the path). NVML stays
// initialised for the provider's lifetime. Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gpu/gpu_provider.h"
#include "gpu/nvml_abi.h"
#include "gpu/nvml_library.h"

namespace canhazgpu::gpu {

class NvmlGpuProvider : public GpuProvider {
 public:
  // Loads the library, resolves the functions and calls nvmlInit_v2. A host
  // without the library gets FailedPrecondition with the dlopen reason.
  // `sysfs_root` is where sys/bus/pci lives ("/"), for the PCIe root complex.
  static absl::StatusOr<std::unique_ptr<NvmlGpuProvider>> Create(
      const std::string& library, const std::string& sysfs_root = "/");
  ~NvmlGpuProvider() override;

  std::string Name() const override { return "nvidia"; }
  absl::StatusOr<std::vector<GpuInfo>> Query() override;

  struct Api;

 private:
  NvmlGpuProvider(std::unique_ptr<NvmlLibrary> library, std::unique_ptr<Api> api,
                  std::string sysfs_root);
  absl::StatusOr<GpuInfo> QueryDevice(unsigned int index);
  // The MIG instances of a GPU in MIG mode: profile, placement, memory.
  absl::Status QueryMig(nvmlDevice_t device, GpuInfo& g);
  // Unavailable "NVML <what>: <NVML's message>" unless `rc` is success.
  absl::Status Check(nvmlReturn_t rc, const char* what) const;

  std::unique_ptr<NvmlLibrary> library_;
  std::unique_ptr<Api> api_;
  std::string sysfs_root_;
  std::string driver_version_;
  std::string cuda_driver_version_;
};

}  // namespace canhazgpu::gpu
