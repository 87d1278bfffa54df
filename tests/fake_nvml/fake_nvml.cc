// A test libnvidia-ml.so: implements the NVML C functions that
// NvmlGpuProvider uses, serving GPUs and processes from a simulated-host JSON
// file (docs/fake-host.md) named by FAKE_NVML_HOST. The file is re-read by
// nvmlDeviceGetCount_v2, so tests can change it between queries.
// FAKE_NVML_INIT_ERROR=<code> makes nvmlInit_v2 fail with that code.
// MIG: a GPU with "mig_instances" has one MIG device per instance (UUID,
// memory), a GPU instance per MIG device (its "gpu_instance_id": 1, 2, ...
// unless the file says otherwise) with one compute instance
// ("compute_instance_id", 0), and the profiles its instances use, each with the
// possible placements of its size within "mig_memory_slices".
// Health: a GPU's "xid_events" are handed out by nvmlEventSetWait_v2, once
// per event set each, in order (the file is re-read on every wait, so a test
// injects an XID by appending it); "lost" makes the GPU's queries answer
// NVML_ERROR_GPU_IS_LOST; "retired_pages_pending" answers
// nvmlDeviceGetRetiredPagesPendingStatus; "events_supported": false makes
// event registration NOT_SUPPORTED.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "gpu/fake_host.h"
#include "gpu/nvml_abi.h"

namespace {

using canhazgpu::GpuInfo;
using canhazgpu::gpu::FakeGpuHealth;
using canhazgpu::gpu::FakeHost;

std::mutex mu;
FakeHost host;
bool initialized = false;
// nvmlInit_v2 calls not yet matched by nvmlShutdown: NVML counts them, so a
// provider and a health monitor in one process can each init and shut down.
int init_count = 0;

nvmlReturn_t Load() {
  const char* path = std::getenv("FAKE_NVML_HOST");
  if (path == nullptr) return NVML_ERROR_DRIVER_NOT_LOADED;
  auto loaded = canhazgpu::gpu::LoadFakeHost(path);
  if (!loaded.ok()) return NVML_ERROR_UNKNOWN;
  host = *std::move(loaded);
  return NVML_SUCCESS;
}

using canhazgpu::MigInstance;

// Handles are numbers disguised as pointers: bits 0-11 the 1-based GPU
// index, bits 12-23 the 1-based MIG slot (MIG devices and GPU instances),
// bit 24 set for a GPU instance.
constexpr uintptr_t kMigShift = 12, kGpuInstanceBit = uintptr_t{1} << 24;

struct Target {
  const GpuInfo* gpu = nullptr;
  const MigInstance* mig = nullptr;
};

Target Decode(uintptr_t handle, bool gpu_instance) {
  if (!initialized || ((handle & kGpuInstanceBit) != 0) != gpu_instance) return {};
  uintptr_t gpu = handle & 0xfff, slot = (handle >> kMigShift) & 0xfff;
  if (gpu == 0 || gpu > host.gpus.size()) return {};
  const GpuInfo& g = host.gpus[gpu - 1];
  if (slot == 0) return gpu_instance ? Target{} : Target{&g, nullptr};
  if (slot > g.mig_instances.size()) return {};
  return {&g, &g.mig_instances[slot - 1]};
}

uintptr_t Encode(const GpuInfo& gpu, size_t slot) {
  return static_cast<uintptr_t>(gpu.index + 1) | (static_cast<uintptr_t>(slot + 1) << kMigShift);
}

// A whole GPU; nullptr for a MIG device or a bad handle.
const GpuInfo* Gpu(nvmlDevice_t device) {
  Target t = Decode(reinterpret_cast<uintptr_t>(device), false);
  return t.mig ? nullptr : t.gpu;
}

// A whole GPU or a MIG device.
Target Device(nvmlDevice_t device) { return Decode(reinterpret_cast<uintptr_t>(device), false); }

const FakeGpuHealth& Health(const GpuInfo& gpu) {
  static const FakeGpuHealth kHealthy;
  const size_t i = static_cast<size_t>(gpu.index);
  return i < host.health.size() ? host.health[i] : kHealthy;
}

// A GPU (or a MIG device of a GPU) marked "lost".
bool IsLost(nvmlDevice_t device) {
  Target t = Device(device);
  return t.gpu != nullptr && Health(*t.gpu).lost;
}

// The GPUs registered on one event set (by UUID, which survives re-reading
// the file) and how many of each GPU's XIDs it has handed out.
struct EventSet {
  std::map<std::string, unsigned long long> registered;
  std::map<std::string, size_t> delivered;
};

constexpr unsigned long long kSupportedEvents = nvmlEventTypeSingleBitEccError |
                                                nvmlEventTypeDoubleBitEccError |
                                                nvmlEventTypePState | nvmlEventTypeXidCriticalError;

// NVML_GPU_INSTANCE_PROFILE_* index of a profile name: by slice count, "+me"
// for the media-extension variants.
unsigned int ProfileIndex(const std::string& profile) {
  int slices = std::atoi(profile.c_str());
  bool me = profile.find("+me") != std::string::npos;
  switch (slices) {
    case 1:
      return me ? 0x7 : 0x0;
    case 2:
      return me ? 0x8 : 0x1;
    case 3:
      return 0x2;
    case 4:
      return 0x3;
    case 7:
      return 0x4;
    case 8:
      return 0x5;
    default:
      return 0x6;
  }
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
  if (rc == NVML_SUCCESS) ++init_count;
  initialized = init_count > 0;
  return rc;
}

NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  std::lock_guard lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  initialized = --init_count > 0;
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
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
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
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInfo* gpu = Gpu(device);
  return gpu ? CopyString(gpu->product_name, name, length) : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  Target t = Device(device);
  if (t.gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return CopyString(t.mig ? t.mig->uuid : t.gpu->uuid, uuid, length);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof(*pci));
  std::strncpy(pci->busId, gpu->pci_bus_id.c_str(), sizeof(pci->busId) - 1);
  std::strncpy(pci->busIdLegacy, gpu->pci_bus_id.c_str(), sizeof(pci->busIdLegacy) - 1);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  Target t = Device(device);
  if (t.gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (t.mig != nullptr) {
    *memory = {t.mig->memory_bytes, t.mig->memory_bytes, 0};
    return NVML_SUCCESS;
  }
  const GpuInfo* gpu = t.gpu;
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
  if (gpu->architecture.empty()) return NVML_ERROR_NOT_SUPPORTED;  // the host file did not say
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

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->minor < 0) return NVML_ERROR_NOT_SUPPORTED;
  *minor = static_cast<unsigned int>(gpu->minor);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // More slots than instances, as on a real GPU: empty slots are NOT_FOUND.
  *count = static_cast<unsigned int>(gpu->mig_instances.size()) + 2;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                             unsigned int index,
                                                             nvmlDevice_t* mig) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->mig_mode != canhazgpu::MigMode::kEnabled) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= gpu->mig_instances.size()) return NVML_ERROR_NOT_FOUND;
  *mig = reinterpret_cast<nvmlDevice_t>(Encode(*gpu, index));
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  std::lock_guard lock(mu);
  Target t = Device(device);
  if (t.mig == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = static_cast<unsigned int>(t.mig->gpu_instance_id);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  std::lock_guard lock(mu);
  Target t = Device(device);
  if (t.mig == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = static_cast<unsigned int>(t.mig->compute_instance_id);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t* instance) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t slot = 0; slot < gpu->mig_instances.size(); ++slot) {
    if (gpu->mig_instances[slot].gpu_instance_id != static_cast<int>(id)) continue;
    *instance = reinterpret_cast<nvmlGpuInstance_t>(Encode(*gpu, slot) | kGpuInstanceBit);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance,
                                                nvmlGpuInstanceInfo_t* info) {
  std::lock_guard lock(mu);
  Target t = Decode(reinterpret_cast<uintptr_t>(instance), true);
  if (t.mig == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(t.gpu->index + 1));
  info->id = static_cast<unsigned int>(t.mig->gpu_instance_id);
  info->profileId = static_cast<unsigned int>(t.mig->profile_id);
  info->placement = {static_cast<unsigned int>(t.mig->placement_start),
                     static_cast<unsigned int>(t.mig->placement_size)};
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device,
                                                             unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_t* info) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->mig_mode == canhazgpu::MigMode::kUnsupported) return NVML_ERROR_NOT_SUPPORTED;
  for (const MigInstance& m : gpu->mig_instances) {
    if (ProfileIndex(m.profile) != profile) continue;
    *info = {};
    info->id = static_cast<unsigned int>(m.profile_id);
    info->sliceCount = static_cast<unsigned int>(std::atoi(m.profile.c_str()));
    info->memorySizeMB = m.memory_bytes / canhazgpu::kMiB;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;  // as NVML says for a profile this GPU lacks
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  std::lock_guard lock(mu);
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto m = std::find_if(
      gpu->mig_instances.begin(), gpu->mig_instances.end(),
      [&](const MigInstance& i) { return i.profile_id == static_cast<int>(profile_id); });
  if (m == gpu->mig_instances.end()) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int size = static_cast<unsigned int>(m->placement_size);
  unsigned int slices = static_cast<unsigned int>(gpu->mig_memory_slices);
  unsigned int n = size == 0 ? 0 : slices / size;
  if (placements == nullptr) {
    *count = n;
    return NVML_SUCCESS;
  }
  if (*count < n) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (unsigned int k = 0; k < n; ++k) placements[k] = {k * size, size};
  *count = n;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                nvmlEnableState_t* pending) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pending = Health(*gpu).retired_pages_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard lock(mu);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = reinterpret_cast<nvmlEventSet_t>(new EventSet);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  std::lock_guard lock(mu);
  delete reinterpret_cast<EventSet*>(set);
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                          unsigned long long* types) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!Health(*gpu).events_supported) return NVML_ERROR_NOT_SUPPORTED;
  *types = kSupportedEvents;
  return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                                  nvmlEventSet_t set) {
  std::lock_guard lock(mu);
  if (IsLost(device)) return NVML_ERROR_GPU_IS_LOST;
  const GpuInfo* gpu = Gpu(device);
  if (gpu == nullptr || set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!Health(*gpu).events_supported || (types & ~kSupportedEvents) != 0) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  reinterpret_cast<EventSet*>(set)->registered[gpu->uuid] |= types;
  return NVML_SUCCESS;
}

namespace {

// The next undelivered XID of a GPU registered on `set`, in GPU order;
// GPU_IS_LOST when there is none and a registered GPU is lost.
nvmlReturn_t NextEvent(EventSet& set, nvmlEventData_t* data) {
  bool lost = false;
  for (const GpuInfo& gpu : host.gpus) {
    auto registered = set.registered.find(gpu.uuid);
    if (registered == set.registered.end()) continue;
    const FakeGpuHealth& health = Health(gpu);
    lost = lost || health.lost;
    size_t& delivered = set.delivered[gpu.uuid];
    if ((registered->second & nvmlEventTypeXidCriticalError) == 0 ||
        delivered >= health.xid_events.size()) {
      continue;
    }
    *data = {};
    data->device = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(gpu.index) + 1);
    data->eventType = nvmlEventTypeXidCriticalError;
    data->eventData = health.xid_events[delivered++];
    data->gpuInstanceId = data->computeInstanceId = NVML_EVENT_NO_INSTANCE;
    return NVML_SUCCESS;
  }
  return lost ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_TIMEOUT;
}

}  // namespace

NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                             unsigned int timeout_ms) {
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      std::lock_guard lock(mu);
      if (!initialized) return NVML_ERROR_UNINITIALIZED;
      Load();  // a file caught mid-write keeps the previous host
      nvmlReturn_t rc = NextEvent(*reinterpret_cast<EventSet*>(set), data);
      if (rc != NVML_ERROR_TIMEOUT) return rc;
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
