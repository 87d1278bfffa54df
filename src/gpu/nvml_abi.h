// The part of NVML's public C ABI (nvml.h) that canhazgpu uses, declared here
// so the project has no build-time dependency on the driver or its headers.
// Layouts and values follow nvml.h; the test libnvidia-ml.so in
// tests/fake_nvml implements these same declarations.
#pragma once

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlProcessInfo_t as used by the _v2 and _v3 running-process queries.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef unsigned int nvmlDeviceArchitecture_t;

// MIG: a GPU in MIG mode is divided into GPU instances, each shown as a MIG
// device with its own handle and UUID. Placements count memory slices.
constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;
// Profile indices for nvmlDeviceGetGpuInstanceProfileInfo run from 0
// (NVML_GPU_INSTANCE_PROFILE_1_SLICE) to NVML_GPU_INSTANCE_PROFILE_COUNT - 1,
// a count that grew with driver versions (0x8, 0xA, 0xD, 0x11); indices a
// driver does not know fail and are skipped. 0x7-0x8 are the "+me" (media
// extensions) variants, 0xA-0xC "+gfx", 0xD-0xE "-me", 0xF-0x10 "+me.all".
constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_COUNT = 0x11;

typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;  // first memory slice
  unsigned int size;   // memory slices
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;  // the parent
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

// nvmlEnableState_t (an enum in nvml.h, an int in its ABI).
typedef int nvmlEnableState_t;
enum : int {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
};

// Events: a set collects the events of the devices registered on it, and
// nvmlEventSetWait_v2 hands them out one at a time (NVML_ERROR_TIMEOUT when
// none came within the timeout, in milliseconds). The event type bits are
// nvml.h's nvmlEventType* macros (unsigned long long).
typedef struct nvmlEventSet_st* nvmlEventSet_t;

constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x0000000000000001ULL;
constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x0000000000000002ULL;
constexpr unsigned long long nvmlEventTypePState = 0x0000000000000004ULL;
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;
constexpr unsigned long long nvmlEventTypeClock = 0x0000000000000010ULL;
constexpr unsigned long long nvmlEventTypePowerSourceChange = 0x0000000000000080ULL;
constexpr unsigned long long nvmlEventMigConfigChange = 0x0000000000000100ULL;
constexpr unsigned long long nvmlEventTypeNone = 0x0000000000000000ULL;

// gpuInstanceId and computeInstanceId of an event not attributable to a MIG
// instance (nvml.h documents the value; the name is ours).
constexpr unsigned int NVML_EVENT_NO_INSTANCE = 0xFFFFFFFF;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;           // the device the event occurred on
  unsigned long long eventType;  // one nvmlEventType* bit
  unsigned long long eventData;  // the XID, for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;    // MIG: the GPU instance an XID is attributable to
  unsigned int computeInstanceId;
} nvmlEventData_t;

}  // extern "C"
