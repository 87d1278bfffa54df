#include "kube/objects_resource.h"

#include "kube/json_object_impl.h"

// The JSON name of each modeled field, in the order of types.go. Everything
// else about reading and writing is in json_object_impl.h.

namespace canhazgpu::kube {

// --- ResourceSlice ----------------------------------------------------------

static constexpr auto Fields(Tag<DeviceAttribute>) {
  using T = DeviceAttribute;
  return std::tuple{Member("int", &T::int_value), Member("bool", &T::bool_value),
                    Member("string", &T::string_value), Member("version", &T::version)};
}

static constexpr auto Fields(Tag<CapacityRequestPolicyRange>) {
  using T = CapacityRequestPolicyRange;
  return std::tuple{Member("min", &T::min), Member("max", &T::max), Member("step", &T::step)};
}

static constexpr auto Fields(Tag<CapacityRequestPolicy>) {
  using T = CapacityRequestPolicy;
  return std::tuple{Member("default", &T::default_value), Member("validValues", &T::valid_values),
                    Member("validRange", &T::valid_range)};
}

static constexpr auto Fields(Tag<DeviceCapacity>) {
  using T = DeviceCapacity;
  return std::tuple{Member("value", &T::value), Member("requestPolicy", &T::request_policy)};
}

static constexpr auto Fields(Tag<Counter>) { return std::tuple{Member("value", &Counter::value)}; }

static constexpr auto Fields(Tag<CounterSet>) {
  return std::tuple{Member("name", &CounterSet::name), Member("counters", &CounterSet::counters)};
}

static constexpr auto Fields(Tag<DeviceCounterConsumption>) {
  using T = DeviceCounterConsumption;
  return std::tuple{Member("counterSet", &T::counter_set), Member("counters", &T::counters)};
}

static constexpr auto Fields(Tag<DeviceTaint>) {
  using T = DeviceTaint;
  return std::tuple{Member("key", &T::key), Member("value", &T::value),
                    Member("effect", &T::effect), Member("timeAdded", &T::time_added)};
}

static constexpr auto Fields(Tag<Device>) {
  using T = Device;
  return std::tuple{Member("name", &T::name),
                    Member("attributes", &T::attributes),
                    Member("capacity", &T::capacity),
                    Member("consumesCounters", &T::consumes_counters),
                    Member("nodeName", &T::node_name),
                    Member("nodeSelector", &T::node_selector),
                    Member("allNodes", &T::all_nodes),
                    Member("taints", &T::taints),
                    Member("bindsToNode", &T::binds_to_node),
                    Member("bindingConditions", &T::binding_conditions),
                    Member("bindingFailureConditions", &T::binding_failure_conditions),
                    Member("allowMultipleAllocations", &T::allow_multiple_allocations)};
}

static constexpr auto Fields(Tag<ResourcePool>) {
  using T = ResourcePool;
  return std::tuple{Member("name", &T::name), Member("generation", &T::generation),
                    Member("resourceSliceCount", &T::resource_slice_count)};
}

static constexpr auto Fields(Tag<ResourceSliceSpec>) {
  using T = ResourceSliceSpec;
  return std::tuple{Member("driver", &T::driver),
                    Member("pool", &T::pool),
                    Member("nodeName", &T::node_name),
                    Member("nodeSelector", &T::node_selector),
                    Member("allNodes", &T::all_nodes),
                    Member("devices", &T::devices),
                    Member("perDeviceNodeSelection", &T::per_device_node_selection),
                    Member("sharedCounters", &T::shared_counters)};
}

static constexpr auto Fields(Tag<ResourceSlice>) {
  using T = ResourceSlice;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

// --- ResourceClaim ----------------------------------------------------------

static constexpr auto Fields(Tag<CelDeviceSelector>) {
  return std::tuple{Member("expression", &CelDeviceSelector::expression)};
}

static constexpr auto Fields(Tag<DeviceSelector>) {
  return std::tuple{Member("cel", &DeviceSelector::cel)};
}

static constexpr auto Fields(Tag<DeviceToleration>) {
  using T = DeviceToleration;
  return std::tuple{Member("key", &T::key), Member("operator", &T::op), Member("value", &T::value),
                    Member("effect", &T::effect),
                    Member("tolerationSeconds", &T::toleration_seconds)};
}

static constexpr auto Fields(Tag<CapacityRequirements>) {
  return std::tuple{Member("requests", &CapacityRequirements::requests)};
}

static constexpr auto Fields(Tag<ExactDeviceRequest>) {
  using T = ExactDeviceRequest;
  return std::tuple{Member("deviceClassName", &T::device_class_name),
                    Member("selectors", &T::selectors),
                    Member("allocationMode", &T::allocation_mode),
                    Member("count", &T::count),
                    Member("adminAccess", &T::admin_access),
                    Member("tolerations", &T::tolerations),
                    Member("capacity", &T::capacity)};
}

static constexpr auto Fields(Tag<DeviceSubRequest>) {
  using T = DeviceSubRequest;
  return std::tuple{
      Member("name", &T::name),           Member("deviceClassName", &T::device_class_name),
      Member("selectors", &T::selectors), Member("allocationMode", &T::allocation_mode),
      Member("count", &T::count),         Member("tolerations", &T::tolerations),
      Member("capacity", &T::capacity)};
}

static constexpr auto Fields(Tag<DeviceRequest>) {
  using T = DeviceRequest;
  return std::tuple{Member("name", &T::name), Member("exactly", &T::exactly),
                    Member("firstAvailable", &T::first_available)};
}

static constexpr auto Fields(Tag<DeviceConstraint>) {
  using T = DeviceConstraint;
  return std::tuple{Member("requests", &T::requests), Member("matchAttribute", &T::match_attribute),
                    Member("distinctAttribute", &T::distinct_attribute)};
}

static constexpr auto Fields(Tag<OpaqueDeviceConfiguration>) {
  using T = OpaqueDeviceConfiguration;
  return std::tuple{Member("driver", &T::driver), Member("parameters", &T::parameters)};
}

static constexpr auto Fields(Tag<DeviceClaimConfiguration>) {
  using T = DeviceClaimConfiguration;
  return std::tuple{Member("requests", &T::requests), Member("opaque", &T::opaque)};
}

static constexpr auto Fields(Tag<DeviceClaim>) {
  using T = DeviceClaim;
  return std::tuple{Member("requests", &T::requests), Member("constraints", &T::constraints),
                    Member("config", &T::config)};
}

static constexpr auto Fields(Tag<ResourceClaimSpec>) {
  return std::tuple{Member("devices", &ResourceClaimSpec::devices)};
}

static constexpr auto Fields(Tag<DeviceRequestAllocationResult>) {
  using T = DeviceRequestAllocationResult;
  return std::tuple{Member("request", &T::request),
                    Member("driver", &T::driver),
                    Member("pool", &T::pool),
                    Member("device", &T::device),
                    Member("adminAccess", &T::admin_access),
                    Member("tolerations", &T::tolerations),
                    Member("bindingConditions", &T::binding_conditions),
                    Member("bindingFailureConditions", &T::binding_failure_conditions),
                    Member("shareID", &T::share_id),
                    Member("consumedCapacity", &T::consumed_capacity)};
}

static constexpr auto Fields(Tag<DeviceAllocationConfiguration>) {
  using T = DeviceAllocationConfiguration;
  return std::tuple{Member("source", &T::source), Member("requests", &T::requests),
                    Member("opaque", &T::opaque)};
}

static constexpr auto Fields(Tag<DeviceAllocationResult>) {
  using T = DeviceAllocationResult;
  return std::tuple{Member("results", &T::results), Member("config", &T::config)};
}

static constexpr auto Fields(Tag<AllocationResult>) {
  using T = AllocationResult;
  return std::tuple{Member("devices", &T::devices), Member("nodeSelector", &T::node_selector),
                    Member("allocationTimestamp", &T::allocation_timestamp)};
}

static constexpr auto Fields(Tag<ResourceClaimConsumerReference>) {
  using T = ResourceClaimConsumerReference;
  return std::tuple{Member("apiGroup", &T::api_group), Member("resource", &T::resource),
                    Member("name", &T::name), Member("uid", &T::uid)};
}

static constexpr auto Fields(Tag<AllocatedDeviceStatus>) {
  using T = AllocatedDeviceStatus;
  return std::tuple{Member("driver", &T::driver),           Member("pool", &T::pool),
                    Member("device", &T::device),           Member("shareID", &T::share_id),
                    Member("conditions", &T::conditions),   Member("data", &T::data),
                    Member("networkData", &T::network_data)};
}

static constexpr auto Fields(Tag<ResourceClaimStatus>) {
  using T = ResourceClaimStatus;
  return std::tuple{Member("allocation", &T::allocation), Member("reservedFor", &T::reserved_for),
                    Member("devices", &T::devices)};
}

static constexpr auto Fields(Tag<ResourceClaim>) {
  using T = ResourceClaim;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec),
                    Member("status", &T::status)};
}

// --- ResourceClaimTemplate, DeviceClass, DeviceTaintRule --------------------

static constexpr auto Fields(Tag<ResourceClaimTemplateSpec>) {
  using T = ResourceClaimTemplateSpec;
  return std::tuple{Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

static constexpr auto Fields(Tag<ResourceClaimTemplate>) {
  using T = ResourceClaimTemplate;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

static constexpr auto Fields(Tag<DeviceClassConfiguration>) {
  return std::tuple{Member("opaque", &DeviceClassConfiguration::opaque)};
}

static constexpr auto Fields(Tag<DeviceClassSpec>) {
  using T = DeviceClassSpec;
  return std::tuple{Member("selectors", &T::selectors), Member("config", &T::config),
                    Member("extendedResourceName", &T::extended_resource_name)};
}

static constexpr auto Fields(Tag<DeviceClass>) {
  using T = DeviceClass;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

static constexpr auto Fields(Tag<DeviceTaintSelector>) {
  using T = DeviceTaintSelector;
  return std::tuple{Member("driver", &T::driver), Member("pool", &T::pool),
                    Member("device", &T::device)};
}

static constexpr auto Fields(Tag<DeviceTaintRuleSpec>) {
  using T = DeviceTaintRuleSpec;
  return std::tuple{Member("deviceSelector", &T::device_selector), Member("taint", &T::taint)};
}

static constexpr auto Fields(Tag<DeviceTaintRule>) {
  using T = DeviceTaintRule;
  return std::tuple{Member("apiVersion", &T::api_version), Member("kind", &T::kind),
                    Member("metadata", &T::metadata), Member("spec", &T::spec)};
}

template struct JsonObject<DeviceAttribute>;
template struct JsonObject<CapacityRequestPolicyRange>;
template struct JsonObject<CapacityRequestPolicy>;
template struct JsonObject<DeviceCapacity>;
template struct JsonObject<Counter>;
template struct JsonObject<CounterSet>;
template struct JsonObject<DeviceCounterConsumption>;
template struct JsonObject<DeviceTaint>;
template struct JsonObject<Device>;
template struct JsonObject<ResourcePool>;
template struct JsonObject<ResourceSliceSpec>;
template struct JsonObject<ResourceSlice>;
template struct JsonObject<CelDeviceSelector>;
template struct JsonObject<DeviceSelector>;
template struct JsonObject<DeviceToleration>;
template struct JsonObject<CapacityRequirements>;
template struct JsonObject<ExactDeviceRequest>;
template struct JsonObject<DeviceSubRequest>;
template struct JsonObject<DeviceRequest>;
template struct JsonObject<DeviceConstraint>;
template struct JsonObject<OpaqueDeviceConfiguration>;
template struct JsonObject<DeviceClaimConfiguration>;
template struct JsonObject<DeviceClaim>;
template struct JsonObject<ResourceClaimSpec>;
template struct JsonObject<DeviceRequestAllocationResult>;
template struct JsonObject<DeviceAllocationConfiguration>;
template struct JsonObject<DeviceAllocationResult>;
template struct JsonObject<AllocationResult>;
template struct JsonObject<ResourceClaimConsumerReference>;
template struct JsonObject<AllocatedDeviceStatus>;
template struct JsonObject<ResourceClaimStatus>;
template struct JsonObject<ResourceClaim>;
template struct JsonObject<ResourceClaimTemplateSpec>;
template struct JsonObject<ResourceClaimTemplate>;
template struct JsonObject<DeviceClassConfiguration>;
template struct JsonObject<DeviceClassSpec>;
template struct JsonObject<DeviceClass>;
template struct JsonObject<DeviceTaintSelector>;
template struct JsonObject<DeviceTaintRuleSpec>;
template struct JsonObject<DeviceTaintRule>;

}  // namespace canhazgpu::kube
