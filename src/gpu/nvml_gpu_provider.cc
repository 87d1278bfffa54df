#include "gpu/nvml_gpu_provider.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "core/status_macros.h"
#include "core/strings.h"
#include "gpu/nvml_abi.h"

namespace canhazgpu::gpu {

// Function pointers resolved from the library. Required ones fail Create()
// when missing; optional ones (newer or not universally supported calls)
// leave their attribute empty.
struct NvmlGpuProvider::Api {
  const NvmlLibrary* library = nullptr;
  const char* ErrorString(nvmlReturn_t rc) const { return library->ErrorString(rc); }
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
  nvmlReturn_t (*GetMinorNumber)(nvmlDevice_t, unsigned int*) = nullptr;
  // MIG instances: all of these, or MIG devices are not listed.
  nvmlReturn_t (*GetMaxMigDeviceCount)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetGpuInstanceId)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetGpuInstanceById)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*) = nullptr;
  nvmlReturn_t (*GpuInstanceGetInfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*) = nullptr;
  nvmlReturn_t (*GetGpuInstanceProfileInfo)(nvmlDevice_t, unsigned int,
                                            nvmlGpuInstanceProfileInfo_t*) = nullptr;
  nvmlReturn_t (*GetGpuInstancePossiblePlacements)(nvmlDevice_t, unsigned int,
                                                   nvmlGpuInstancePlacement_t*,
                                                   unsigned int*) = nullptr;
  // Optional: without it a MIG device's compute instance is unknown.
  nvmlReturn_t (*GetComputeInstanceId)(nvmlDevice_t, unsigned int*) = nullptr;

  bool HasMig() const {
    return GetMaxMigDeviceCount && GetMigDeviceHandleByIndex && GetGpuInstanceId &&
           GetGpuInstanceById && GpuInstanceGetInfo && GetGpuInstanceProfileInfo &&
           GetGpuInstancePossiblePlacements;
  }
};

namespace {

std::string ArchitectureName(nvmlDeviceArchitecture_t arch) {
  static const std::map<unsigned int, std::string> kNames = {
      {2, "Kepler"}, {3, "Maxwell"}, {4, "Pascal"}, {5, "Volta"},      {6, "Turing"},
      {7, "Ampere"}, {8, "Ada"},     {9, "Hopper"}, {10, "Blackwell"},
  };
  auto it = kNames.find(arch);
  return it == kNames.end() ? "Unknown" : it->second;
}

// The profile's name as nvidia-smi and the MIG manager write it: slices,
// memory rounded up to whole GB, and the variant's suffix ("1g.10gb+me").
std::string ProfileName(unsigned int index, const nvmlGpuInstanceProfileInfo_t& info) {
  std::string suffix;
  if (index == 0x7 || index == 0x8) suffix = "+me";
  if (index >= 0xA && index <= 0xC) suffix = "+gfx";
  if (index == 0xD || index == 0xE) suffix = "-me";
  if (index == 0xF || index == 0x10) suffix = "+me.all";
  return StrCat(info.sliceCount, "g.", (info.memorySizeMB + 1023) / 1024, "gb", suffix);
}

// The PCIe root complex of a PCI device, from where sysfs places it:
// /sys/bus/pci/devices/0000:1b:00.0 -> ../../../devices/pci0000:17/.../0000:1b:00.0.
// NVML writes the domain with eight digits ("00000000:1B:00.0"), sysfs with four.
std::string PcieRoot(const std::string& sysfs_root, const std::string& nvml_bus_id) {
  std::string id = nvml_bus_id;
  if (id.size() > 12) id = id.substr(id.size() - 12);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::error_code error;
  std::filesystem::path link = std::filesystem::path(sysfs_root) / "sys/bus/pci/devices" / id;
  std::filesystem::path target = std::filesystem::read_symlink(link, error);
  if (error) return "";
  for (const auto& part : target) {
    if (part.string().rfind("pci", 0) == 0) return part.string();
  }
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlGpuProvider>> NvmlGpuProvider::Create(
    const std::string& library, const std::string& sysfs_root) {
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> nvml, NvmlLibrary::Open(library));
  const NvmlLibrary& lib = *nvml;
  auto api = std::make_unique<Api>();
  api->library = nvml.get();
  // The _v3 process queries exist since driver 510; _v2 has the same layout.
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetCount_v2", &api->GetCount));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetHandleByIndex_v2", &api->GetHandleByIndex));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetName", &api->GetName));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetUUID", &api->GetUuid));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetPciInfo_v3", &api->GetPciInfo));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetMemoryInfo", &api->GetMemoryInfo));
  RETURN_IF_ERROR(lib.RequireAny(
      {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
      &api->GetComputeProcesses));
  RETURN_IF_ERROR(lib.RequireAny(
      {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
      &api->GetGraphicsProcesses));
  RETURN_IF_ERROR(lib.Require("nvmlSystemGetDriverVersion", &api->GetDriverVersion));
  lib.ResolveAny({"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"},
                 &api->GetCudaDriverVersion);
  lib.Resolve("nvmlDeviceGetCudaComputeCapability", &api->GetComputeCapability);
  lib.Resolve("nvmlDeviceGetArchitecture", &api->GetArchitecture);
  lib.Resolve("nvmlDeviceGetMigMode", &api->GetMigMode);
  lib.Resolve("nvmlDeviceGetMinorNumber", &api->GetMinorNumber);
  lib.Resolve("nvmlDeviceGetMaxMigDeviceCount", &api->GetMaxMigDeviceCount);
  lib.Resolve("nvmlDeviceGetMigDeviceHandleByIndex", &api->GetMigDeviceHandleByIndex);
  lib.Resolve("nvmlDeviceGetGpuInstanceId", &api->GetGpuInstanceId);
  lib.Resolve("nvmlDeviceGetComputeInstanceId", &api->GetComputeInstanceId);
  lib.Resolve("nvmlDeviceGetGpuInstanceById", &api->GetGpuInstanceById);
  lib.Resolve("nvmlGpuInstanceGetInfo", &api->GpuInstanceGetInfo);
  lib.Resolve("nvmlDeviceGetGpuInstanceProfileInfo", &api->GetGpuInstanceProfileInfo);
  lib.Resolve("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
              &api->GetGpuInstancePossiblePlacements);

  return std::unique_ptr<NvmlGpuProvider>(
      new NvmlGpuProvider(std::move(nvml), std::move(api), sysfs_root));
}

NvmlGpuProvider::NvmlGpuProvider(std::unique_ptr<NvmlLibrary> library, std::unique_ptr<Api> api,
                                 std::string sysfs_root)
    : library_(std::move(library)), api_(std::move(api)), sysfs_root_(std::move(sysfs_root)) {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (api_->GetDriverVersion(version, sizeof(version)) == NVML_SUCCESS) driver_version_ = version;
  int cuda = 0;
  if (api_->GetCudaDriverVersion != nullptr && api_->GetCudaDriverVersion(&cuda) == NVML_SUCCESS) {
    // 12040 -> "12.4", as NVML's NVML_CUDA_DRIVER_VERSION_MAJOR/MINOR macros.
    cuda_driver_version_ = StrCat(cuda / 1000, ".", (cuda % 1000) / 10);
  }
}

NvmlGpuProvider::~NvmlGpuProvider() = default;

absl::StatusOr<std::vector<GpuInfo>> NvmlGpuProvider::Query() {
  unsigned int count = 0;
  nvmlReturn_t rc = api_->GetCount(&count);
  if (rc != NVML_SUCCESS) {
    return absl::UnavailableError(StrCat("NVML: cannot count GPUs: ", api_->ErrorString(rc)));
  }
  if (count > static_cast<unsigned int>(kMaxGpus)) {
    return absl::FailedPreconditionError(
        StrCat("NVML reports ", count, " GPUs; canhazgpu supports at most ", kMaxGpus));
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
  auto check = [&](nvmlReturn_t rc, const char* what) { return Check(rc, what); };
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
  unsigned int minor_number = 0;
  if (api_->GetMinorNumber != nullptr &&
      api_->GetMinorNumber(device, &minor_number) == NVML_SUCCESS) {
    g.minor = static_cast<int>(minor_number);
  }
  g.pcie_root = PcieRoot(sysfs_root_, g.pci_bus_id);
  unsigned int current = 0, pending = 0;
  if (api_->GetMigMode != nullptr) {
    nvmlReturn_t rc = api_->GetMigMode(device, &current, &pending);
    if (rc == NVML_SUCCESS) {
      g.mig_mode = current == NVML_DEVICE_MIG_ENABLE ? MigMode::kEnabled : MigMode::kDisabled;
    }
  }
  if (g.mig_mode == MigMode::kEnabled && api_->HasMig()) {
    RETURN_IF_ERROR(QueryMig(device, g));
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

absl::Status NvmlGpuProvider::Check(nvmlReturn_t rc, const char* what) const {
  if (rc == NVML_SUCCESS) return absl::OkStatus();
  return absl::UnavailableError(StrCat("NVML ", what, ": ", api_->ErrorString(rc)));
}

absl::Status NvmlGpuProvider::QueryMig(nvmlDevice_t device, GpuInfo& g) {
  auto check = [&](nvmlReturn_t rc, const char* what) {
    return Check(rc, StrCat("MIG ", what).c_str());
  };
  // The profiles this GPU offers, by profile id; the memory slices are the
  // extent of their possible placements (8 on A100 and H100).
  std::map<unsigned int, std::string> profile_names;
  for (unsigned int index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_t info = {};
    if (api_->GetGpuInstanceProfileInfo(device, index, &info) != NVML_SUCCESS) continue;
    profile_names.emplace(info.id, ProfileName(index, info));
    unsigned int count = 0;
    if (api_->GetGpuInstancePossiblePlacements(device, info.id, nullptr, &count) != NVML_SUCCESS ||
        count == 0) {
      continue;
    }
    std::vector<nvmlGpuInstancePlacement_t> placements(count);
    if (api_->GetGpuInstancePossiblePlacements(device, info.id, placements.data(), &count) !=
        NVML_SUCCESS) {
      continue;
    }
    for (unsigned int k = 0; k < count && k < placements.size(); ++k) {
      g.mig_memory_slices =
          std::max(g.mig_memory_slices, static_cast<int>(placements[k].start + placements[k].size));
    }
  }
  unsigned int max_devices = 0;
  RETURN_IF_ERROR(check(api_->GetMaxMigDeviceCount(device, &max_devices), "device count"));
  for (unsigned int i = 0; i < max_devices; ++i) {
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t rc = api_->GetMigDeviceHandleByIndex(device, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND) continue;  // no instance in this slot
    RETURN_IF_ERROR(check(rc, "device handle"));
    MigInstance m;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    RETURN_IF_ERROR(check(api_->GetUuid(mig, uuid, sizeof(uuid)), "uuid"));
    m.uuid = uuid;
    nvmlMemory_t memory = {};
    RETURN_IF_ERROR(check(api_->GetMemoryInfo(mig, &memory), "memory info"));
    m.memory_bytes = memory.total;
    unsigned int gi_id = 0;
    RETURN_IF_ERROR(check(api_->GetGpuInstanceId(mig, &gi_id), "GPU instance id"));
    nvmlGpuInstance_t gi = nullptr;
    RETURN_IF_ERROR(check(api_->GetGpuInstanceById(device, gi_id, &gi), "GPU instance"));
    nvmlGpuInstanceInfo_t info = {};
    RETURN_IF_ERROR(check(api_->GpuInstanceGetInfo(gi, &info), "GPU instance info"));
    m.profile_id = static_cast<int>(info.profileId);
    auto name = profile_names.find(info.profileId);
    if (name == profile_names.end()) {
      return absl::UnavailableError(
          StrCat("NVML MIG: instance ", m.uuid, " has unknown profile id ", info.profileId));
    }
    m.profile = name->second;
    m.placement_start = static_cast<int>(info.placement.start);
    m.placement_size = static_cast<int>(info.placement.size);
    m.gpu_instance_id = static_cast<int>(gi_id);
    unsigned int ci_id = 0;
    if (api_->GetComputeInstanceId != nullptr &&
        api_->GetComputeInstanceId(mig, &ci_id) == NVML_SUCCESS) {
      m.compute_instance_id = static_cast<int>(ci_id);
    }
    g.mig_instances.push_back(std::move(m));
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::gpu
