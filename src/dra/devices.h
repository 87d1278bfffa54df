// The host's GPUs as DRA devices, shaped exactly like the devices of a
// resource.k8s.io/v1 ResourceSlice: typed attributes and capacities under
// the driver domain gpu.canhazgpu.dev, and - for MIG - partitionable
// counters (KEP-4815) so that a full GPU and its MIG instances can never be
// allocated together. BuildDevicePool() is the one place devices are made;
// `canhazgpu devices`, --where selectors and the node driver all use it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cel/value.h"
#include "core/gpu.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::dra {

inline constexpr char kDriverName[] = "gpu.canhazgpu.dev";
inline constexpr char kPcieRootAttribute[] = "resource.kubernetes.io/pcieRoot";

struct AttributeValue {
  enum class Kind { kInt, kBool, kString, kVersion };
  Kind kind = Kind::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  std::string string_value;  // string, or the semver text of a version

  static AttributeValue Int(int64_t v) { return {Kind::kInt, v, false, ""}; }
  static AttributeValue Bool(bool v) { return {Kind::kBool, 0, v, ""}; }
  static AttributeValue String(std::string v) { return {Kind::kString, 0, false, std::move(v)}; }
  static AttributeValue Version(std::string v) { return {Kind::kVersion, 0, false, std::move(v)}; }
  std::string ToString() const;
  bool operator==(const AttributeValue& o) const {
    return kind == o.kind && int_value == o.int_value && bool_value == o.bool_value &&
           string_value == o.string_value;
  }
};

// Quantities are kept as integers: bytes for memory, units for counters.
struct CounterConsumption {
  std::string counter_set;
  std::map<std::string, int64_t> counters;
};

// A device taint (resource.k8s.io/v1 DeviceTaint). NoSchedule and NoExecute
// keep the device from requests that do not tolerate it; None informs only.
struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;

  std::string ToString() const;  // "key=value:Effect"
  bool operator==(const DeviceTaint&) const = default;
};

// A capacity's requestPolicy (KEP-5075 consumable capacity): how much a
// request that names the capacity consumes (rounded up), and how much one
// that does not name it consumes (the default). validValues and validRange
// are one-of; an empty policy (all unset) is the same as none.
struct CapacityRequestPolicy {
  std::optional<int64_t> default_value;
  std::vector<int64_t> valid_values;  // ascending
  std::optional<int64_t> range_min;   // set: validRange is given
  std::optional<int64_t> range_max;
  std::optional<int64_t> range_step;

  bool operator==(const CapacityRequestPolicy&) const = default;
};

struct Device {
  std::string name;  // "gpu-0", "gpu-0-mig-1g10gb-19-0"
  // Qualified names; a name without a domain is in the driver's domain.
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, int64_t> capacity;
  // allowMultipleAllocations: the device may be allocated as shares, and
  // all of its capacity is consumable.
  bool allow_multiple_allocations = false;
  // requestPolicy of a capacity (by the capacity's name); only on devices
  // that allow multiple allocations.
  std::map<std::string, CapacityRequestPolicy> request_policies;
  std::vector<CounterConsumption> consumes_counters;
  // Only what a consumer read from a ResourceSlice; BuildDevicePool leaves
  // it empty (the node driver adds taints when it publishes).
  std::vector<DeviceTaint> taints;
  // Not published: the host GPU (index) this device is or is part of.
  int gpu_index = 0;
  bool is_mig = false;
  // Not published: a MIG device's GPU and compute instance ids (-1 unknown),
  // which name its capability device nodes.
  int mig_gpu_instance = -1;
  int mig_compute_instance = -1;

  // The string attribute `name`; "" when the device has none.
  std::string StringAttribute(const std::string& name) const {
    auto it = attributes.find(name);
    return it == attributes.end() ? "" : it->second.string_value;
  }
};

struct CounterSet {
  std::string name;  // "gpu-0-counter-set"
  std::map<std::string, int64_t> counters;
};

struct DevicePool {
  std::string driver = kDriverName;
  std::string pool;  // the node name
  std::vector<CounterSet> shared_counters;
  std::vector<Device> devices;
};

inline constexpr char kMemoryIsolationAttribute[] = "memoryIsolation";

// How the node publishes its GPUs (ADR 0018). The defaults publish every
// device for exclusive use, as before sharing existed.
struct PoolOptions {
  // Publish each shareable GPU (a full GPU, not in MIG mode, readable) with
  // allowMultipleAllocations and a memory request policy whose default is
  // the whole usable memory, so a claim that asks for no capacity still
  // gets it alone.
  bool sharing = false;
  // Memory kept back for the driver's own use on a shared GPU (KAI#2212).
  int64_t reserved_bytes = 512 * static_cast<int64_t>(kMiB);
  // The memoryIsolation attribute of a shared GPU: none, mps, mps-dmem.
  std::string isolation = "none";
};

// Every readable GPU, and each MIG instance of a GPU in MIG mode.
DevicePool BuildDevicePool(const std::vector<GpuInfo>& gpus, const std::string& node,
                           const PoolOptions& options = {});

// What of `total` bytes a share may use: less the reserved margin, rounded
// down to a MiB; 0 when too little is left to share (under 2 MiB).
int64_t ShareableMemory(int64_t total, int64_t reserved_bytes);

// One device of a ResourceSlice's spec.devices, and one of its
// spec.sharedCounters.
nlohmann::ordered_json DeviceJson(const Device& device);
nlohmann::ordered_json CounterSetJson(const CounterSet& set);

// The pool as one resource.k8s.io/v1 ResourceSlice object.
nlohmann::ordered_json ResourceSliceJson(const DevicePool& pool);

// A quantity in Kubernetes' canonical binary form: "80Gi", "512Mi", "1000".
std::string FormatQuantity(int64_t value);

// The `device` CEL variable for a selector.
cel::Value CelDevice(const Device& device, std::string_view driver);

// Looks an attribute up as matchAttribute does: the qualified name, or the
// short name when the domain is the driver's. nullptr when absent.
const AttributeValue* FindAttribute(const Device& device, std::string_view driver,
                                    std::string_view qualified);

}  // namespace canhazgpu::dra
