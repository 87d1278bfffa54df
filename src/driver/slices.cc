#include "driver/slices.h"

#include "core/strings.h"
#include "kube/resource_rules.h"

namespace canhazgpu::driver {
namespace {

using nlohmann::json;

constexpr size_t kMaxNameBytes = 253;

json TaintJson(const Taint& t) {
  json j = {{"key", t.key}, {"effect", t.effect}};
  if (!t.value.empty()) j["value"] = t.value;
  if (!t.time_added.empty()) j["timeAdded"] = t.time_added;
  return j;
}

// The device as published, without attributes or capacities the API server
// would reject (each is checked alone, so one bad value costs only itself).
json PublishableDevice(const dra::Device& device, const std::vector<Taint>* taints,
                       const std::string& driver, std::vector<std::string>& dropped) {
  json d(dra::DeviceJson(device));
  for (const char* map : {"attributes", "capacity"}) {
    for (auto it = d[map].begin(); it != d[map].end();) {
      const json probe = {{"driver", driver},
                          {"pool", {{"name", "p"}, {"generation", 0}, {"resourceSliceCount", 1}}},
                          {"nodeName", "n"},
                          {"devices", {{{"name", "d"}, {map, {{it.key(), it.value()}}}}}}};
      const std::vector<kube::StatusCause> causes = kube::CheckResourceSliceSpec(probe);
      if (causes.empty()) {
        ++it;
        continue;
      }
      dropped.push_back(StrCat(device.name, ": ",
                               map == std::string("attributes") ? "attribute " : "capacity ",
                               it.key(), ": ", causes.front().message));
      it = d[map].erase(it);
    }
  }
  if (taints != nullptr && !taints->empty()) {
    json list = json::array();
    for (const Taint& t : *taints) list.push_back(TaintJson(t));
    d["taints"] = list;
  }
  return d;
}

bool IsAdvanced(const json& device) {
  return device.contains("taints") || device.contains("consumesCounters");
}

}  // namespace

std::string SliceName(const std::string& node, const std::string& driver, size_t n) {
  const std::string suffix = StrCat("-", driver, "-", n);
  return StrCat(Utf8Prefix(node, kMaxNameBytes - suffix.size()), suffix);
}

BuiltSlices BuildSlices(const NodeDevices& devices, int64_t generation) {
  const dra::DevicePool& pool = devices.pool;
  BuiltSlices out;
  std::vector<json> specs;
  auto new_spec = [&] {
    return json{{"driver", pool.driver},
                {"pool", {{"name", pool.pool}, {"generation", generation}}},
                {"nodeName", pool.pool}};
  };
  if (!pool.shared_counters.empty()) {
    json spec = new_spec();
    spec["sharedCounters"] = json::array();
    for (const dra::CounterSet& set : pool.shared_counters) {
      spec["sharedCounters"].push_back(json(dra::CounterSetJson(set)));
    }
    specs.push_back(std::move(spec));
  }
  json current;  // the slice being filled
  bool current_advanced = false;
  for (const dra::Device& device : pool.devices) {
    if (devices.withheld.count(device.name) > 0) continue;
    auto taints = devices.taints.find(device.name);
    json d = PublishableDevice(device, taints == devices.taints.end() ? nullptr : &taints->second,
                               pool.driver, out.dropped);
    const bool advanced = current_advanced || IsAdvanced(d);
    const size_t limit = advanced ? kMaxAdvancedDevicesPerSlice : kMaxDevicesPerSlice;
    if (!current.is_null() && current["devices"].size() + 1 > limit) {
      specs.push_back(std::move(current));
      current = json();
    }
    if (current.is_null()) {
      current = new_spec();
      current["devices"] = json::array();
      current_advanced = false;
    }
    current_advanced = current_advanced || IsAdvanced(d);
    current["devices"].push_back(std::move(d));
  }
  if (!current.is_null()) specs.push_back(std::move(current));
  if (specs.empty()) {
    json empty = new_spec();
    empty["devices"] = json::array();
    specs.push_back(std::move(empty));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i]["pool"]["resourceSliceCount"] = static_cast<int64_t>(specs.size());
    json meta = {{"name", SliceName(pool.pool, pool.driver, i)}};
    if (!devices.node_uid.empty()) {
      meta["ownerReferences"] = {{{"apiVersion", "v1"},
                                  {"kind", "Node"},
                                  {"name", pool.pool},
                                  {"uid", devices.node_uid},
                                  {"controller", true}}};
    }
    out.slices.push_back({{"apiVersion", "resource.k8s.io/v1"},
                          {"kind", "ResourceSlice"},
                          {"metadata", std::move(meta)},
                          {"spec", std::move(specs[i])}});
  }
  return out;
}

}  // namespace canhazgpu::driver
