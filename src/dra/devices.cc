#include "dra/devices.h"

#include <algorithm>

#include "cel/dra_device.h"
#include "cel/semver.h"
#include "core/strings.h"

namespace canhazgpu::dra {
namespace {

constexpr int64_t kKi = 1024;

// Versions are published normalized ("8.0" -> "8.0.0", "535.104.05" ->
// "535.104.5"), or left out when they are not versions at all.
void AddVersion(Device& d, const std::string& name, const std::string& text) {
  if (text.empty()) return;
  auto v = cel::Semver::Parse(text, /*normalize=*/true);
  if (v.ok()) d.attributes[name] = AttributeValue::Version(v->ToString());
}

void AddString(Device& d, const std::string& name, const std::string& text) {
  if (!text.empty()) d.attributes[name] = AttributeValue::String(text.substr(0, 64));
}

// Attributes a MIG instance shares with its parent GPU.
void AddCommon(Device& d, const GpuInfo& g) {
  AddString(d, "productName", g.product_name);
  AddString(d, "brand", g.brand);
  AddString(d, "architecture", g.architecture);
  AddVersion(d, "cudaComputeCapability", g.compute_capability);
  AddVersion(d, "driverVersion", g.driver_version);
  AddVersion(d, "cudaDriverVersion", g.cuda_driver_version);
  AddString(d, "pcieBusID", g.pci_bus_id);
  AddString(d, kPcieRootAttribute, g.pcie_root);
}

// A shareable GPU (ADR 0018): memory less the margin, 1 MiB steps, the
// whole of it by default.
void PublishForSharing(Device& gpu, const PoolOptions& options) {
  const int64_t value = ShareableMemory(gpu.capacity["memory"], options.reserved_bytes);
  if (value == 0) return;
  const int64_t mib = static_cast<int64_t>(kMiB);
  gpu.allow_multiple_allocations = true;
  gpu.capacity["memory"] = value;
  gpu.request_policies["memory"] = {value, {}, mib, value, mib};
  gpu.attributes[kMemoryIsolationAttribute] = AttributeValue::String(options.isolation);
}

std::string NoDots(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != '.') out.push_back(c);
  }
  return out;
}

nlohmann::ordered_json AttributeJson(const AttributeValue& v) {
  switch (v.kind) {
    case AttributeValue::Kind::kInt:
      return {{"int", v.int_value}};
    case AttributeValue::Kind::kBool:
      return {{"bool", v.bool_value}};
    case AttributeValue::Kind::kString:
      return {{"string", v.string_value}};
    case AttributeValue::Kind::kVersion:
      return {{"version", v.string_value}};
  }
  return {};
}

nlohmann::ordered_json PolicyJson(const CapacityRequestPolicy& p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (p.default_value) out["default"] = FormatQuantity(*p.default_value);
  if (!p.valid_values.empty()) {
    out["validValues"] = nlohmann::ordered_json::array();
    for (int64_t v : p.valid_values) out["validValues"].push_back(FormatQuantity(v));
  }
  if (p.range_min) {
    nlohmann::ordered_json range = {{"min", FormatQuantity(*p.range_min)}};
    if (p.range_max) range["max"] = FormatQuantity(*p.range_max);
    if (p.range_step) range["step"] = FormatQuantity(*p.range_step);
    out["validRange"] = range;
  }
  return out;
}

nlohmann::ordered_json CountersJson(const std::map<std::string, int64_t>& counters) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : counters) out[name] = {{"value", FormatQuantity(value)}};
  return out;
}

}  // namespace

std::string DeviceTaint::ToString() const {
  return value.empty() ? StrCat(key, ":", effect) : StrCat(key, "=", value, ":", effect);
}

std::string AttributeValue::ToString() const {
  switch (kind) {
    case Kind::kInt:
      return std::to_string(int_value);
    case Kind::kBool:
      return bool_value ? "true" : "false";
    default:
      return string_value;
  }
}

std::string FormatQuantity(int64_t value) {
  static constexpr std::pair<int, const char*> kSuffixes[] = {{6, "Ei"}, {5, "Pi"}, {4, "Ti"},
                                                              {3, "Gi"}, {2, "Mi"}, {1, "Ki"}};
  if (value != 0) {
    for (auto [power, suffix] : kSuffixes) {
      int64_t unit = 1;
      for (int i = 0; i < power; ++i) unit *= kKi;
      if (value % unit == 0) return StrCat(value / unit, suffix);
    }
  }
  return std::to_string(value);
}

int64_t ShareableMemory(int64_t total, int64_t reserved_bytes) {
  const int64_t mib = static_cast<int64_t>(kMiB);
  const int64_t usable = (total - std::max<int64_t>(reserved_bytes, 0)) / mib * mib;
  // validRange needs min + step <= value: at least two steps of 1 MiB.
  return usable >= 2 * mib ? usable : 0;
}

DevicePool BuildDevicePool(const std::vector<GpuInfo>& gpus, const std::string& node,
                           const PoolOptions& options) {
  DevicePool pool;
  pool.pool = node;
  for (const GpuInfo& g : gpus) {
    if (!g.error.empty()) continue;  // an unreadable GPU is not offered
    int minor = g.minor >= 0 ? g.minor : g.index;
    Device gpu;
    gpu.name = StrCat("gpu-", minor);
    gpu.gpu_index = g.index;
    gpu.attributes["type"] = AttributeValue::String("gpu");
    AddString(gpu, "uuid", g.uuid);
    gpu.attributes["index"] = AttributeValue::Int(g.index);
    gpu.attributes["minor"] = AttributeValue::Int(minor);
    AddCommon(gpu, g);
    gpu.capacity["memory"] = static_cast<int64_t>(g.memory_total_bytes);
    if (options.sharing && g.mig_mode != MigMode::kEnabled) PublishForSharing(gpu, options);
    bool partitioned = g.mig_mode == MigMode::kEnabled && g.mig_memory_slices > 0;
    if (partitioned) {
      CounterSet set{StrCat("gpu-", minor, "-counter-set"), {}};
      set.counters["memory"] = static_cast<int64_t>(g.memory_total_bytes);
      for (int s = 0; s < g.mig_memory_slices; ++s) set.counters[StrCat("memory-slice-", s)] = 1;
      // The full GPU consumes everything, so it and any MIG instance exclude
      // each other.
      gpu.consumes_counters.push_back({set.name, set.counters});
      pool.shared_counters.push_back(set);
    }
    pool.devices.push_back(gpu);
    if (!partitioned) continue;
    for (const MigInstance& m : g.mig_instances) {
      Device mig;
      mig.name = StrCat("gpu-", minor, "-mig-", NoDots(m.profile), "-", m.profile_id, "-",
                        m.placement_start);
      mig.gpu_index = g.index;
      mig.is_mig = true;
      mig.mig_gpu_instance = m.gpu_instance_id;
      mig.mig_compute_instance = m.compute_instance_id;
      mig.attributes["type"] = AttributeValue::String("mig");
      AddString(mig, "uuid", m.uuid);
      AddString(mig, "parentUUID", g.uuid);
      AddString(mig, "profile", m.profile);
      AddCommon(mig, g);
      mig.capacity["memory"] = static_cast<int64_t>(m.memory_bytes);
      CounterConsumption use{StrCat("gpu-", minor, "-counter-set"), {}};
      use.counters["memory"] = static_cast<int64_t>(m.memory_bytes);
      for (int s = m.placement_start; s < m.placement_start + m.placement_size; ++s) {
        use.counters[StrCat("memory-slice-", s)] = 1;
      }
      mig.consumes_counters.push_back(std::move(use));
      pool.devices.push_back(std::move(mig));
    }
  }
  return pool;
}

nlohmann::ordered_json DeviceJson(const Device& d) {
  nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
  for (const auto& [name, value] : d.attributes) attributes[name] = AttributeJson(value);
  nlohmann::ordered_json capacity = nlohmann::ordered_json::object();
  for (const auto& [name, value] : d.capacity) {
    capacity[name] = {{"value", FormatQuantity(value)}};
    auto policy = d.request_policies.find(name);
    if (policy != d.request_policies.end())
      capacity[name]["requestPolicy"] = PolicyJson(policy->second);
  }
  nlohmann::ordered_json device = {
      {"name", d.name}, {"attributes", attributes}, {"capacity", capacity}};
  if (d.allow_multiple_allocations) device["allowMultipleAllocations"] = true;
  if (!d.consumes_counters.empty()) {
    nlohmann::ordered_json consumes = nlohmann::ordered_json::array();
    for (const CounterConsumption& c : d.consumes_counters) {
      consumes.push_back({{"counterSet", c.counter_set}, {"counters", CountersJson(c.counters)}});
    }
    device["consumesCounters"] = consumes;
  }
  return device;
}

nlohmann::ordered_json CounterSetJson(const CounterSet& set) {
  return {{"name", set.name}, {"counters", CountersJson(set.counters)}};
}

nlohmann::ordered_json ResourceSliceJson(const DevicePool& pool) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const Device& d : pool.devices) devices.push_back(DeviceJson(d));
  nlohmann::ordered_json spec = {
      {"driver", pool.driver},
      {"pool", {{"name", pool.pool}, {"generation", 1}, {"resourceSliceCount", 1}}},
      {"nodeName", pool.pool}};
  if (!pool.shared_counters.empty()) {
    nlohmann::ordered_json sets = nlohmann::ordered_json::array();
    for (const CounterSet& s : pool.shared_counters) sets.push_back(CounterSetJson(s));
    spec["sharedCounters"] = sets;
  }
  spec["devices"] = devices;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", StrCat(pool.pool, "-", pool.driver)}}},
          {"spec", spec}};
}

cel::Value CelDevice(const Device& device, std::string_view driver) {
  std::vector<std::pair<std::string, cel::Value>> attributes, capacity;
  for (const auto& [name, v] : device.attributes) {
    cel::Value value;
    switch (v.kind) {
      case AttributeValue::Kind::kInt:
        value = cel::Value::Int(v.int_value);
        break;
      case AttributeValue::Kind::kBool:
        value = cel::Value::Bool(v.bool_value);
        break;
      case AttributeValue::Kind::kString:
        value = cel::Value::String(v.string_value);
        break;
      case AttributeValue::Kind::kVersion: {
        auto semver = cel::Semver::Parse(v.string_value);
        if (!semver.ok()) continue;  // published versions are already valid
        value = cel::Value::FromSemver(*semver);
        break;
      }
    }
    attributes.emplace_back(name, std::move(value));
  }
  for (const auto& [name, bytes] : device.capacity) {
    capacity.emplace_back(name, cel::Value::FromQuantity(Quantity::FromInt(bytes)));
  }
  return cel::MakeDraDevice(driver, attributes, capacity);
}

const AttributeValue* FindAttribute(const Device& device, std::string_view driver,
                                    std::string_view qualified) {
  auto it = device.attributes.find(std::string(qualified));
  if (it != device.attributes.end()) return &it->second;
  size_t slash = qualified.find('/');
  if (slash != std::string_view::npos && qualified.substr(0, slash) == driver) {
    it = device.attributes.find(std::string(qualified.substr(slash + 1)));
    if (it != device.attributes.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace canhazgpu::dra
