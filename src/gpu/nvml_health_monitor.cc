#include "gpu/nvml_health_monitor.h"

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::gpu {

// The NVML functions the monitor calls. Required ones fail Create() when
// missing; without an optional one its check is skipped.
struct NvmlHealthMonitor::Api {
  nvmlReturn_t (*GetCount)(unsigned int*);
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*GetUuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*);
  nvmlReturn_t (*RegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
  // Optional.
  nvmlReturn_t (*GetSupportedEventTypes)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*GetMinorNumber)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetRetiredPagesPending)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
};

namespace {

// XIDs are what the monitor acts on. A double-bit ECC event ends the wait
// early so that the poll right after it sees the pages pending retirement;
// single-bit errors are corrected and only registered because NVIDIA's
// plugins do, so the same GPUs count as supported.
constexpr unsigned long long kWantedEvents =
    nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeSingleBitEccError;

// After one round has handed out this many events the polls run anyway, so
// a storm of events cannot starve them or delay Stop().
constexpr int kMaxEventsPerRound = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<NvmlHealthMonitor>> NvmlHealthMonitor::Create(
    const std::string& library, const Clock& clock, HealthOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> nvml, NvmlLibrary::Open(library));
  const NvmlLibrary& lib = *nvml;
  auto api = std::make_unique<Api>();
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetCount_v2", &api->GetCount));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetHandleByIndex_v2", &api->GetHandleByIndex));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetUUID", &api->GetUuid));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceGetMemoryInfo", &api->GetMemoryInfo));
  RETURN_IF_ERROR(lib.Require("nvmlEventSetCreate", &api->EventSetCreate));
  RETURN_IF_ERROR(lib.Require("nvmlDeviceRegisterEvents", &api->RegisterEvents));
  RETURN_IF_ERROR(lib.Require("nvmlEventSetWait_v2", &api->EventSetWait));
  RETURN_IF_ERROR(lib.Require("nvmlEventSetFree", &api->EventSetFree));
  lib.Resolve("nvmlDeviceGetSupportedEventTypes", &api->GetSupportedEventTypes);
  lib.Resolve("nvmlDeviceGetMinorNumber", &api->GetMinorNumber);
  lib.Resolve("nvmlDeviceGetRetiredPagesPendingStatus", &api->GetRetiredPagesPending);

  nvmlEventSet_t set = nullptr;
  nvmlReturn_t rc = api->EventSetCreate(&set);
  if (rc != NVML_SUCCESS) {
    return absl::UnavailableError(StrCat("NVML event set: ", lib.ErrorString(rc)));
  }
  std::unique_ptr<NvmlHealthMonitor> monitor(
      new NvmlHealthMonitor(std::move(nvml), std::move(api), set, clock, std::move(options)));
  monitor->AddGpus();
  return monitor;
}

NvmlHealthMonitor::NvmlHealthMonitor(std::unique_ptr<NvmlLibrary> library, std::unique_ptr<Api> api,
                                     nvmlEventSet_t set, const Clock& clock, HealthOptions options)
    : library_(std::move(library)),
      api_(std::move(api)),
      set_(set),
      options_(options),
      tracker_(clock, std::move(options)) {}

NvmlHealthMonitor::~NvmlHealthMonitor() {
  Stop();
  api_->EventSetFree(set_);
}

void NvmlHealthMonitor::AddGpus() {
  unsigned int count = 0;
  nvmlReturn_t rc = api_->GetCount(&count);
  if (rc != NVML_SUCCESS) count = 0;  // nothing to watch; the provider reports the error
  for (unsigned int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.index = static_cast<int>(i);
    rc = api_->GetHandleByIndex(i, &gpu.handle);
    if (rc != NVML_SUCCESS) gpu.handle = nullptr;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    unsigned int minor = 0;
    const bool has_uuid =
        gpu.handle != nullptr && api_->GetUuid(gpu.handle, uuid, sizeof(uuid)) == NVML_SUCCESS;
    const bool has_minor = gpu.handle != nullptr && api_->GetMinorNumber != nullptr &&
                           api_->GetMinorNumber(gpu.handle, &minor) == NVML_SUCCESS;
    tracker_.AddGpu(gpu.index, has_minor ? static_cast<int>(minor) : -1, has_uuid ? uuid : "");
    if (gpu.handle == nullptr) {
      // A GPU that fell off the bus has no handle; the polls retry it.
      if (rc == NVML_ERROR_GPU_IS_LOST) {
        tracker_.SetLost(gpu.index, true, library_->ErrorString(rc));
      } else {
        gpu.needs_registration = false;
        tracker_.SetUnmonitored(gpu.index, true,
                                StrCat("no NVML handle: ", library_->ErrorString(rc)));
      }
    } else {
      Register(gpu);
    }
    gpus_.push_back(gpu);
  }
}

void NvmlHealthMonitor::Register(Gpu& gpu) {
  unsigned long long supported = kWantedEvents;
  nvmlReturn_t rc = NVML_SUCCESS;
  if (api_->GetSupportedEventTypes != nullptr) {
    rc = api_->GetSupportedEventTypes(gpu.handle, &supported);
  }
  if (rc == NVML_SUCCESS && (supported & nvmlEventTypeXidCriticalError) == 0) {
    rc = NVML_ERROR_NOT_SUPPORTED;
  }
  if (rc == NVML_SUCCESS) rc = api_->RegisterEvents(gpu.handle, supported & kWantedEvents, set_);
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    tracker_.SetLost(gpu.index, true, library_->ErrorString(rc));
    return;  // retried when it is back
  }
  gpu.needs_registration = false;
  if (rc != NVML_SUCCESS) {
    tracker_.SetUnmonitored(gpu.index, true,
                            StrCat("XID events: NVML: ", library_->ErrorString(rc)));
  }
}

void NvmlHealthMonitor::Poll(Gpu& gpu) {
  if (gpu.handle == nullptr) {
    nvmlReturn_t rc = api_->GetHandleByIndex(static_cast<unsigned int>(gpu.index), &gpu.handle);
    if (rc != NVML_SUCCESS) {
      gpu.handle = nullptr;
      return;
    }
  }
  // The memory query reaches the GPU on every driver and every GPU, which
  // makes it the liveness probe.
  nvmlMemory_t memory = {};
  nvmlReturn_t rc = api_->GetMemoryInfo(gpu.handle, &memory);
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    tracker_.SetLost(gpu.index, true, library_->ErrorString(rc));
    return;
  }
  if (rc == NVML_SUCCESS) tracker_.SetLost(gpu.index, false);
  if (gpu.needs_registration) Register(gpu);
  if (api_->GetRetiredPagesPending == nullptr) return;
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  rc = api_->GetRetiredPagesPending(gpu.handle, &pending);
  // NOT_SUPPORTED: no ECC (or row remapping instead of page retirement).
  if (rc == NVML_SUCCESS) {
    tracker_.SetEccRetirementPending(gpu.index, pending == NVML_FEATURE_ENABLED);
  } else if (rc == NVML_ERROR_GPU_IS_LOST) {
    tracker_.SetLost(gpu.index, true, library_->ErrorString(rc));
  }
}

void NvmlHealthMonitor::HandleEvent(const nvmlEventData_t& event) {
  if ((event.eventType & nvmlEventTypeXidCriticalError) == 0) return;
  for (const Gpu& gpu : gpus_) {
    if (gpu.handle != event.device) continue;
    std::string detail;
    if (event.gpuInstanceId != NVML_EVENT_NO_INSTANCE) {
      detail = StrCat(", MIG GPU instance ", event.gpuInstanceId);
    }
    tracker_.RecordXid(gpu.index, event.eventData, detail);
    return;
  }
}

void NvmlHealthMonitor::RunOnce() {
  const auto wait_ms = static_cast<unsigned int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.event_wait).count());
  bool polled_early = false;
  for (int n = 0; n < kMaxEventsPerRound; ++n) {
    nvmlEventData_t event = {};
    // The first wait blocks; the rest only drain what is already there.
    nvmlReturn_t rc = api_->EventSetWait(set_, &event, n == 0 ? wait_ms : 0);
    if (rc == NVML_SUCCESS) {
      HandleEvent(event);
      continue;
    }
    if (rc != NVML_ERROR_TIMEOUT && n == 0) {
      // GPU_IS_LOST or worse, without saying which GPU: the polls find out.
      // Waiting here keeps a wait that fails at once from spinning.
      polled_early = true;
      for (Gpu& gpu : gpus_) Poll(gpu);
      if (!Backoff()) return;
    }
    break;
  }
  if (!polled_early) {
    for (Gpu& gpu : gpus_) Poll(gpu);
  }
  tracker_.ExpireQuietXids();
}

bool NvmlHealthMonitor::Backoff() {
  MutexLock lock(mu_);
  stop_cv_.wait_for(lock, options_.event_wait,
                    [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; });
  return !stopping_;
}

void NvmlHealthMonitor::Start() {
  MutexLock lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] {
    while (true) {
      {
        MutexLock round(mu_);
        if (stopping_) return;
      }
      RunOnce();
    }
  });
}

void NvmlHealthMonitor::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  tracker_.Stop();
}

}  // namespace canhazgpu::gpu
