#include "clusterview/slice_pools.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/quantity.h"
#include "core/strings.h"

namespace canhazgpu::clusterview {
namespace {

absl::StatusOr<dra::AttributeValue> AttributeFrom(const kube::DeviceAttribute& a) {
  int set = a.int_value.has_value() + a.bool_value.has_value() + a.string_value.has_value() +
            a.version.has_value();
  if (set != 1)
    return absl::InvalidArgumentError("needs exactly one of int, bool, string, version");
  if (a.int_value) return dra::AttributeValue::Int(*a.int_value);
  if (a.bool_value) return dra::AttributeValue::Bool(*a.bool_value);
  if (a.string_value) return dra::AttributeValue::String(*a.string_value);
  return dra::AttributeValue::Version(*a.version);
}

absl::StatusOr<std::map<std::string, int64_t>> CountersFrom(
    const std::map<std::string, kube::Counter>& counters) {
  std::map<std::string, int64_t> out;
  for (const auto& [name, counter] : counters) {
    auto value = QuantityValue(counter.value);
    if (!value.ok()) {
      return absl::InvalidArgumentError(StrCat("counter ", name, ": ", value.status().message()));
    }
    out[name] = *value;
  }
  return out;
}

absl::StatusOr<std::optional<int64_t>> OptionalQuantity(const std::string& text,
                                                        const char* field) {
  if (text.empty()) return std::optional<int64_t>();
  auto value = QuantityValue(text);
  if (!value.ok()) return absl::InvalidArgumentError(StrCat(field, ": ", value.status().message()));
  return std::optional<int64_t>(*value);
}

// A capacity's requestPolicy; nullopt when it has none.
absl::StatusOr<std::optional<dra::CapacityRequestPolicy>> PolicyFrom(
    const kube::CapacityRequestPolicy& p) {
  if (p.IsEmpty()) return std::optional<dra::CapacityRequestPolicy>();
  dra::CapacityRequestPolicy out;
  auto def = OptionalQuantity(p.default_value, "requestPolicy.default");
  if (!def.ok()) return def.status();
  out.default_value = *def;
  for (const std::string& v : p.valid_values) {
    auto value = OptionalQuantity(v, "requestPolicy.validValues");
    if (!value.ok()) return value.status();
    if (value->has_value()) out.valid_values.push_back(**value);
  }
  const kube::CapacityRequestPolicyRange& r = p.valid_range;
  if (!r.IsEmpty()) {
    if (r.min.empty()) return absl::InvalidArgumentError("requestPolicy.validRange.min: required");
    auto min = OptionalQuantity(r.min, "requestPolicy.validRange.min");
    auto max = OptionalQuantity(r.max, "requestPolicy.validRange.max");
    auto step = OptionalQuantity(r.step, "requestPolicy.validRange.step");
    for (const auto* q : {&min, &max, &step}) {
      if (!q->ok()) return q->status();
    }
    out.range_min = *min;
    out.range_max = *max;
    out.range_step = *step;
  }
  return std::optional<dra::CapacityRequestPolicy>(std::move(out));
}

// The slices of one pool at its highest generation.
struct PoolSlices {
  int64_t generation = -1;
  std::vector<const kube::ResourceSlice*> slices;
};

// One pool's slices as a NodePool; InvalidArgument in one line.
absl::StatusOr<NodePool> PoolFrom(const std::string& driver, const std::string& name,
                                  const PoolSlices& in) {
  NodePool out;
  out.pool.driver = driver;
  out.pool.pool = name;
  std::set<std::string> device_names, set_names;
  bool first = true;
  for (const kube::ResourceSlice* slice : in.slices) {
    const kube::ResourceSliceSpec& spec = slice->spec;
    const std::string where = StrCat("slice ", slice->metadata.name, ": ");
    if (spec.per_device_node_selection.value_or(false) || !spec.node_selector.is_null()) {
      return absl::InvalidArgumentError(
          StrCat(where, "nodeSelector and perDeviceNodeSelection are not supported here"));
    }
    const std::string node = spec.node_name;
    if (node.empty() && !spec.all_nodes.value_or(false) && !spec.devices.empty()) {
      return absl::InvalidArgumentError(StrCat(where, "names no node and is not for allNodes"));
    }
    if (!first && node != out.node && !spec.devices.empty()) {
      return absl::InvalidArgumentError(StrCat(
          where, "is for node '", node, "' but the pool's other slices for '", out.node, "'"));
    }
    if (first || out.node.empty()) out.node = node;
    first = false;
    for (const kube::CounterSet& set : spec.shared_counters) {
      if (!set_names.insert(set.name).second) {
        return absl::InvalidArgumentError(
            StrCat(where, "counter set ", set.name, " appears twice in the pool"));
      }
      auto counters = CountersFrom(set.counters);
      if (!counters.ok()) {
        return absl::InvalidArgumentError(
            StrCat(where, "counter set ", set.name, ": ", counters.status().message()));
      }
      out.pool.shared_counters.push_back({set.name, *std::move(counters)});
    }
    for (const kube::Device& d : spec.devices) {
      if (!device_names.insert(d.name).second) {
        return absl::InvalidArgumentError(
            StrCat(where, "device ", d.name, " appears twice in the pool"));
      }
      auto device = DeviceFromSlice(d);
      if (!device.ok()) return absl::InvalidArgumentError(StrCat(where, device.status().message()));
      out.pool.devices.push_back(*std::move(device));
    }
  }
  // Every consumed counter must exist, or the allocator could not account
  // for it.
  for (const dra::Device& d : out.pool.devices) {
    for (const dra::CounterConsumption& c : d.consumes_counters) {
      auto set = std::find_if(out.pool.shared_counters.begin(), out.pool.shared_counters.end(),
                              [&](const dra::CounterSet& s) { return s.name == c.counter_set; });
      for (const auto& [counter, amount] : c.counters) {
        if (set == out.pool.shared_counters.end() || !set->counters.contains(counter)) {
          return absl::InvalidArgumentError(StrCat("device ", d.name, " consumes counter ",
                                                   c.counter_set, "/", counter,
                                                   " that no slice of the pool shares"));
        }
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<dra::Device> DeviceFromSlice(const kube::Device& device) {
  dra::Device out;
  out.name = device.name;
  const std::string where = StrCat("device ", device.name, ": ");
  if (device.name.empty()) return absl::InvalidArgumentError("a device has no name");
  for (const auto& [name, attribute] : device.attributes) {
    auto value = AttributeFrom(attribute);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          StrCat(where, "attribute ", name, ": ", value.status().message()));
    }
    out.attributes[name] = *std::move(value);
  }
  for (const auto& [name, capacity] : device.capacity) {
    auto value = QuantityValue(capacity.value);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          StrCat(where, "capacity ", name, ": ", value.status().message()));
    }
    out.capacity[name] = *value;
    auto policy = PolicyFrom(capacity.request_policy);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          StrCat(where, "capacity ", name, ": ", policy.status().message()));
    }
    if (policy->has_value()) out.request_policies[name] = **std::move(policy);
  }
  out.allow_multiple_allocations = device.allow_multiple_allocations.value_or(false);
  for (const kube::DeviceCounterConsumption& c : device.consumes_counters) {
    auto counters = CountersFrom(c.counters);
    if (!counters.ok()) {
      return absl::InvalidArgumentError(
          StrCat(where, "consumesCounters ", c.counter_set, ": ", counters.status().message()));
    }
    out.consumes_counters.push_back({c.counter_set, *std::move(counters)});
  }
  for (const kube::DeviceTaint& t : device.taints) {
    if (t.key.empty()) return absl::InvalidArgumentError(StrCat(where, "a taint has no key"));
    if (t.effect != "NoSchedule" && t.effect != "NoExecute" && t.effect != "None") {
      return absl::InvalidArgumentError(
          StrCat(where, "taint ", t.key, ": unknown effect '", t.effect, "'"));
    }
    out.taints.push_back({t.key, t.value, t.effect});
  }
  return out;
}

SlicePools PoolsFromSlices(const std::vector<kube::ResourceSlice>& slices) {
  std::map<std::pair<std::string, std::string>, PoolSlices> pools;
  for (const kube::ResourceSlice& slice : slices) {
    PoolSlices& p = pools[{slice.spec.driver, slice.spec.pool.name}];
    const int64_t generation = slice.spec.pool.generation.value_or(0);
    if (generation > p.generation) {
      p.generation = generation;
      p.slices.clear();
    }
    if (generation == p.generation) p.slices.push_back(&slice);
  }
  SlicePools out;
  for (const auto& [key, p] : pools) {
    const auto& [driver, name] = key;
    const std::string id = StrCat("pool ", driver, "/", name, ": ");
    if (driver.empty() || name.empty()) {
      out.problems.push_back(StrCat(id, "a slice has no driver or pool name"));
      continue;
    }
    // Every slice of one generation states the same count.
    const int64_t want = p.slices.front()->spec.pool.resource_slice_count.value_or(0);
    if (static_cast<int64_t>(p.slices.size()) != want) {
      out.problems.push_back(StrCat(id, "incomplete, ", p.slices.size(), " of ", want,
                                    " slices at generation ", p.generation,
                                    "; its devices are not used until the rest arrive"));
      continue;
    }
    auto pool = PoolFrom(driver, name, p);
    if (!pool.ok()) {
      out.problems.push_back(StrCat(id, pool.status().message()));
      continue;
    }
    out.pools.push_back(*std::move(pool));
  }
  return out;
}

}  // namespace canhazgpu::clusterview
