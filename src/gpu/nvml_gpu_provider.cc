#include "gpu/nvml_gpu_provider.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>

#include "core/status_macros.h"
#include "core/strings.h"
#include "gpu/nvml_abi.h"

namespace canhazgpu::gpu {

// Function pointers resolved from the library. Required ones fail Create()
// when missing; optional ones (newer or not universally supported calls)
// leave their attribute empty.
struct NvmlGpuProvider::Api {
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*GetCount)(unsigned int*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetUuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*);
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*GetComputeProcesses)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
  nvmlReturn_t (*GetGraphicsProcesses)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
  nvmlReturn_t (*GetDriverVersion)(char*, unsigned int);
  // Optional.
  nvmlReturn_t (*GetCudaDriverVersion)(int*) = nullptr;
  nvmlReturn_t (*GetComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*GetArchitecture)(nvmlDevice_t, nvmlDeviceArchitecture_t*) = nullptr;
  nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
};

namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

// Tries each name in turn: the _v3 process queries exist since driver 510;
// _v2 has the same struct layout.
template <typename Fn>
bool ResolveAny(void* handle, std::initializer_list<const char*> names, Fn* fn) {
  for (const char* name : names) {
    if (Resolve(handle, name, fn)) return true;
  }
  return false;
}

std::string ArchitectureName(nvmlDeviceArchitecture_t arch) {
  static const std::map<unsigned int, std::string> kNames = {
      {2, "Kepler"}, {3, "Maxwell"}, {4, "Pascal"}, {5, "Volta"},      {6, "Turing"},
      {7, "Ampere"}, {8, "Ada"},     {9, "Hopper"}, {10, "Blackwell"},
  };
  auto it = kNames.find(arch);
  return it == kNames.end() ? "Unknown" : it->second;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlGpuProvider>> NvmlGpuProvider::Create(
    const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("NVIDIA driver library not available (", dlerror(),
               "); install the NVIDIA driver, or use --provider fake for a simulated host"));
  }
  auto api = std::make_unique<Api>();
  struct Required {
    const char* name;
    bool ok;
  } required[] = {
      {"nvmlInit_v2", Resolve(handle, "nvmlInit_v2", &api->Init)},
      {"nvmlShutdown", Resolve(handle, "nvmlShutdown", &api->Shutdown)},
      {"nvmlErrorString", Resolve(handle, "nvmlErrorString", &api->ErrorString)},
      {"nvmlDeviceGetCount_v2", Resolve(handle, "nvmlDeviceGetCount_v2", &api->GetCount)},
      {"nvmlDeviceGetHandleByIndex_v2",
       Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &api->GetHandleByIndex)},
      {"nvmlDeviceGetName", Resolve(handle, "nvmlDeviceGetName", &api->GetName)},
      {"nvmlDeviceGetUUID", Resolve(handle, "nvmlDeviceGetUUID", &api->GetUuid)},
      {"nvmlDeviceGetPciInfo_v3", Resolve(handle, "nvmlDeviceGetPciInfo_v3", &api->GetPciInfo)},
      {"nvmlDeviceGetMemoryInfo", Resolve(handle, "nvmlDeviceGetMemoryInfo", &api->GetMemoryInfo)},
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       ResolveAny(
           handle,
           {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
           &api->GetComputeProcesses)},
      {"nvmlDeviceGetGraphicsRunningProcesses_v3",
       ResolveAny(
           handle,
           {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
           &api->GetGraphicsProcesses)},
      {"nvmlSystemGetDriverVersion",
       Resolve(handle, "nvmlSystemGetDriverVersion", &api->GetDriverVersion)},
  };
  for (const Required& r : required) {
    if (!r.ok) {
      dlclose(handle);
      return absl::FailedPreconditionError(
          StrCat("NVIDIA library ", library, " lacks ", r.name, "; the driver is too old"));
    }
  }
  ResolveAny(handle, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"},
             &api->GetCudaDriverVersion);
  Resolve(handle, "nvmlDeviceGetCudaComputeCapability", &api->GetComputeCapability);
  Resolve(handle, "nvmlDeviceGetArchitecture", &api->GetArchitecture);
  Resolve(handle, "nvmlDeviceGetMigMode", &api->GetMigMode);

  nvmlReturn_t rc = api->Init();
  if (rc != NVML_SUCCESS) {
    std::string reason = api->ErrorString(rc);
    dlclose(handle);
    return absl::FailedPreconditionError(StrCat("NVML initialisation failed: ", reason));
  }
  return std::unique_ptr<NvmlGpuProvider>(new NvmlGpuProvider(handle, std::move(api)));
}

NvmlGpuProvider::NvmlGpuProvider(void* handle, std::unique_ptr<Api> api)
    : handle_(handle), api_(std::move(api)) {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (api_->GetDriverVersion(version, sizeof(version)) == NVML_SUCCESS) driver_version_ = version;
  int cuda = 0;
  if (api_->GetCudaDriverVersion != nullptr && api_->GetCudaDriverVersion(&cuda) == NVML_SUCCESS) {
    // 12040 -> "12.4", as NVML's NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR macros.
    cuda_driver_version_ = StrCat(cuda / 1000, ".", (cuda % 1000) / 10);
  }
}

NvmlGpuProvider::~NvmlGpuProvider() {
  api_->Shutdown();
  dlclose(handle_);
}

absl::StatusOr<std::vector<GpuInfo>> NvmlGpuProvider::Query() {
  unsigned int count = 0;
  nvmlReturn_t rc = api_->GetCount(&count);
  if (rc != NVML_SUCCESS) {
    return absl::UnavailableError(StrCat("NVML: cannot count GPUs: ", api_->ErrorString(rc)));
  }
  std::vector<GpuInfo> gpus;
  for (unsigned int i = 0; i < count; ++i) {
    absl::StatusOr<GpuInfo> gpu = QueryDevice(i);
    if (!gpu.ok()) {
      // One unreadable GPU (fallen off the bus, say) must not hide the others.
      GpuInfo broken;
      broken.index = static_cast<int>(i);
      broken.error = std::string(gpu.status().message());
      gpus.push_back(std::move(broken));
      continue;
    }
    gpus.push_back(*std::move(gpu));
  }
  return gpus;
}

absl::StatusOr<GpuInfo> NvmlGpuProvider::QueryDevice(unsigned int index) {
  auto check = [&](nvmlReturn_t rc, const char* what) -> absl::Status {
    if (rc == NVML_SUCCESS) return absl::OkStatus();
    return absl::UnavailableError(StrCat("NVML ", what, ": ", api_->ErrorString(rc)));
  };
  nvmlDevice_t device = nullptr;
  RETURN_IF_ERROR(check(api_->GetHandleByIndex(index, &device), "handle"));
  GpuInfo g;
  g.index = static_cast<int>(index);
  g.brand = "NVIDIA";
  g.driver_version = driver_version_;
  g.cuda_driver_version = cuda_driver_version_;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  RETURN_IF_ERROR(check(api_->GetName(device, name, sizeof(name)), "name"));
  g.product_name = name;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  RETURN_IF_ERROR(check(api_->GetUuid(device, uuid, sizeof(uuid)), "uuid"));
  g.uuid = uuid;
  nvmlPciInfo_t pci = {};
  RETURN_IF_ERROR(check(api_->GetPciInfo(device, &pci), "pci info"));
  g.pci_bus_id = pci.busId;
  nvmlMemory_t memory = {};
  RETURN_IF_ERROR(check(api_->GetMemoryInfo(device, &memory), "memory info"));
  g.memory_total_bytes = memory.total;
  g.memory_used_bytes = memory.used;
  int major = 0, minor = 0;
  if (api_->GetComputeCapability != nullptr &&
      api_->GetComputeCapability(device, &major, &minor) == NVML_SUCCESS) {
    g.compute_capability = StrCat(major, ".", minor);
  }
  nvmlDeviceArchitecture_t arch = 0;
  if (api_->GetArchitecture != nullptr && api_->GetArchitecture(device, &arch) == NVML_SUCCESS) {
    g.architecture = ArchitectureName(arch);
  }
  unsigned int current = 0, pending = 0;
  if (api_->GetMigMode != nullptr) {
    nvmlReturn_t rc = api_->GetMigMode(device, &current, &pending);
    if (rc == NVML_SUCCESS) g.mig_mode = current == 1 ? MigMode::kEnabled : MigMode::kDisabled;
  }
  // Compute and graphics processes both hold memory; a process in both lists
  // (a "C+G" process) is counted once, with the larger figure.
  std::map<int64_t, uint64_t> processes;
  for (auto* query : {api_->GetComputeProcesses, api_->GetGraphicsProcesses}) {
    std::vector<nvmlProcessInfo_t> infos(16);
    unsigned int n = static_cast<unsigned int>(infos.size());
    nvmlReturn_t rc = query(device, &n, infos.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      infos.resize(n + 8);  // processes may start between the two calls
      n = static_cast<unsigned int>(infos.size());
      rc = query(device, &n, infos.data());
    }
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;
    RETURN_IF_ERROR(check(rc, "running processes"));
    for (unsigned int k = 0; k < n; ++k) {
      uint64_t used =
          infos[k].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? 0 : infos[k].usedGpuMemory;
      uint64_t& slot = processes[infos[k].pid];
      slot = std::max(slot, used);
    }
  }
  for (const auto& [pid, used] : processes) g.processes.push_back({pid, used});
  return g;
}

}  // namespace canhazgpu::gpu
