// A test libnvidia-ml.so: implements the NVML C functions that
// NvmlGpuProvider uses, serving GPUs and processes from a simulated-host JSON
// file (docs/fake-host.md) named by FAKE_NVML_HOST. The file is re-read by
// nvmlDeviceGetCount_v2, so tests can change it between queries.
// FAKE_NVML_INIT_ERROR=<code> makes nvmlInit_v2 fail with that code.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "gpu/fake_host.h"
#include "gpu/nvml_abi.h"

namespace {

using canhazgpu::GpuInfo;
using canhazgpu::gpu::FakeHost;

std::mutex mu;
FakeHost host;
bool initialized = false;

nvmlReturn_t Load() {
  const char* path = std::getenv("FAKE_NVML_HOST");
  if (path == nullptr) return NVML_ERROR_DRIVER_NOT_LOADED;
  auto loaded = canhazgpu::gpu::LoadFakeHost(path);
  if (!loaded.ok()) return NVML_ERROR_UNKNOWN;
  host = *std::move(loaded);
  return NVML_SUCCESS;
}

// Handles are 1-based indexes disguised as pointers.
const GpuInfo* Gpu(nvmlDevice_t device) {
  auto index = reinterpret_cast<uintptr_t>(device);
  if (!initialized || index == 0 || index > host.gpus.size()) return nullptr;
  return &host.gpus[index - 1];
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t Processes(nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_t* infos) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = static_cast<unsigned int>(gpu->processes.size());
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < n; ++i) {
    infos[i].pid = static_cast<unsigned int>(gpu->processes[i].pid);
    infos[i].usedGpuMemory = gpu->processes[i].used_memory_bytes;
    infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFF;
  }
  *count = n;
  return NVML_SUCCESS;
}

}  // namespace

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  if (const char* code = std::getenv("FAKE_NVML_INIT_ERROR")) return std::atoi(code);
  std::lock_guard lock(mu);
  nvmlReturn_t rc = Load();
  initialized = rc == NVML_SUCCESS;
  return rc;
}

NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard lock(mu);
  initialized = false;
  return NVML_SUCCESS;
}

NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard lock(mu);
  return CopyString(host.driver_version, version, length);
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  std::lock_guard lock(mu);
  // "12.4" -> 12040
  int major = std::atoi(host.cuda_driver_version.c_str());
  const char* dot = std::strchr(host.cuda_driver_version.c_str(), '.');
  int minor = dot ? std::atoi(dot + 1) : 0;
  *version = major * 1000 + minor * 10;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard lock(mu);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  nvmlReturn_t rc = Load();
  if (rc != NVML_SUCCESS) return rc;
  *count = static_cast<unsigned int>(host.gpus.size());
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard lock(mu);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (index >= host.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (!host.gpus[index].error.empty()) return NVML_ERROR_GPU_IS_LOST;
  *device = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(index) + 1);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  return gpu ? CopyString(gpu->product_name, name, length) : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  return gpu ? CopyString(gpu->uuid, uuid, length) : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof(*pci));
  std::strncpy(pci->busId, gpu->pci_bus_id.c_str(), sizeof(pci->busId) - 1);
  std::strncpy(pci->busIdLegacy, gpu->pci_bus_id.c_str(), sizeof(pci->busIdLegacy) - 1);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = gpu->memory_total_bytes;
  memory->used = gpu->memory_used_bytes;
  memory->free =
      gpu->memory_total_bytes - std::min<unsigned long long>(gpu->memory_total_bytes, memory->used);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                            int* minor) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->compute_capability.empty()) return NVML_ERROR_NOT_SUPPORTED;
  *major = std::atoi(gpu->compute_capability.c_str());
  const char* dot = std::strchr(gpu->compute_capability.c_str(), '.');
  *minor = dot ? std::atoi(dot + 1) : 0;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                                   nvmlDeviceArchitecture_t* arch) {
  static const char* kNames[] = {"",       "",       "Kepler", "Maxwell", "Pascal",   "Volta",
                                 "Turing", "Ampere", "Ada",    "Hopper",  "Blackwell"};
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 2; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    if (gpu->architecture == kNames[i]) {
      *arch = i;
      return NVML_SUCCESS;
    }
  }
  *arch = 0xffffffff;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                              unsigned int* pending) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->mig_mode == canhazgpu::MigMode::kUnsupported) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = gpu->mig_mode == canhazgpu::MigMode::kEnabled ? 1 : 0;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int* count,
                                                                 nvmlProcessInfo_t* infos) {
  return Processes(device, count, infos);
}

// The simulated host does not tell compute from graphics: every process is
// reported as compute, and the graphics list repeats the first process so
// that the provider's de-duplication is exercised.
NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                  unsigned int* count,
                                                                  nvmlProcessInfo_t* infos) {
  unsigned int all = 64;
  nvmlProcessInfo_t buffer[64];
  nvmlReturn_t rc = Processes(device, &all, buffer);
  if (rc != NVML_SUCCESS) return rc;
  unsigned int n = all > 0 ? 1 : 0;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (n == 1) infos[0] = buffer[0];
  *count = n;
  return NVML_SUCCESS;
}
