// Typed objects of resource.k8s.io/v1 (Dynamic Resource Allocation, GA in
// Kubernetes 1.34): ResourceSlice, ResourceClaim, ResourceClaimTemplate,
// DeviceClass, and DeviceTaintRule. Field names follow the JSON names in
// snake_case; see shared/reference/dra.md §2 for what each one means. What a
// DRA driver and our CLI read and write is modeled; deeper or rarely used parts
// (node selectors, opaque parameters, device status data) stay nlohmann::json, and fields not
// listed here at all are kept in each struct's `unknown` and written back unchanged
// (json_object.h). Quantities and times stay the strings the server sent (quantity.h parses
// quantities). Plain values; not thread-safe to mutate from two threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/json_object.h"
#include "kube/objects_meta.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

inline constexpr char kResourceApiVersion[] = "resource.k8s.io/v1";

// --- ResourceSlice ----------------------------------------------------------

// Exactly one of the values is set in a valid attribute; all are read, so a
// malformed one still comes back as it was.
struct DeviceAttribute : JsonObject<DeviceAttribute> {
  static constexpr std::string_view kJsonShape = "an object with one of int, bool, string, version";
  std::optional<int64_t> int_value;         // "int"
  std::optional<bool> bool_value;           // "bool"
  std::optional<std::string> string_value;  // "string"
  std::optional<std::string> version;       // semver 2.0.0
};

// Consumable capacity (KEP-5075): quantities as the server sent them.
struct CapacityRequestPolicyRange : JsonObject<CapacityRequestPolicyRange> {
  std::string min;  // required
  std::string max;
  std::string step;
};

// validValues and validRange are one-of.
struct CapacityRequestPolicy : JsonObject<CapacityRequestPolicy> {
  std::string default_value;  // "default"
  std::vector<std::string> valid_values;
  CapacityRequestPolicyRange valid_range;
};

struct DeviceCapacity : JsonObject<DeviceCapacity> {
  std::string value;                     // quantity, e.g. "80Gi"
  CapacityRequestPolicy request_policy;  // only with allowMultipleAllocations
};

struct Counter : JsonObject<Counter> {
  std::string value;  // quantity
};

struct CounterSet : JsonObject<CounterSet> {
  std::string name;
  std::map<std::string, Counter> counters;
};

struct DeviceCounterConsumption : JsonObject<DeviceCounterConsumption> {
  std::string counter_set;
  std::map<std::string, Counter> counters;
};

struct DeviceTaint : JsonObject<DeviceTaint> {
  std::string key;
  std::string value;
  std::string effect;      // NoSchedule, NoExecute
  std::string time_added;  // RFC 3339
};

struct Device : JsonObject<Device> {
  std::string name;
  std::map<std::string, DeviceAttribute> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  std::vector<DeviceCounterConsumption> consumes_counters;
  std::string node_name;         // with perDeviceNodeSelection
  nlohmann::json node_selector;  // core/v1 NodeSelector
  std::optional<bool> all_nodes;
  std::vector<DeviceTaint> taints;
  std::optional<bool> binds_to_node;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<bool> allow_multiple_allocations;
};

struct ResourcePool : JsonObject<ResourcePool> {
  std::string name;
  std::optional<int64_t> generation;
  std::optional<int64_t> resource_slice_count;
};

struct ResourceSliceSpec : JsonObject<ResourceSliceSpec> {
  std::string driver;
  ResourcePool pool;
  std::string node_name;
  nlohmann::json node_selector;  // core/v1 NodeSelector
  std::optional<bool> all_nodes;
  std::vector<Device> devices;
  std::optional<bool> per_device_node_selection;
  std::vector<CounterSet> shared_counters;
};

struct ResourceSlice : JsonObject<ResourceSlice> {
  std::string api_version = kResourceApiVersion;
  std::string kind = "ResourceSlice";
  ObjectMeta metadata;
  ResourceSliceSpec spec;
};

// --- ResourceClaim ----------------------------------------------------------

struct CelDeviceSelector : JsonObject<CelDeviceSelector> {
  std::string expression;
};

struct DeviceSelector : JsonObject<DeviceSelector> {
  CelDeviceSelector cel;
};

struct DeviceToleration : JsonObject<DeviceToleration> {
  std::string key;
  std::string op;  // "operator": Exists, Equal
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
};

struct CapacityRequirements : JsonObject<CapacityRequirements> {
  std::map<std::string, std::string> requests;  // quantities
};

struct ExactDeviceRequest : JsonObject<ExactDeviceRequest> {
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;  // ExactCount (the default), All
  std::optional<int64_t> count;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  CapacityRequirements capacity;
};

// One alternative of a firstAvailable list: an exact request without
// adminAccess.
struct DeviceSubRequest : JsonObject<DeviceSubRequest> {
  std::string name;
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;
  std::optional<int64_t> count;
  std::vector<DeviceToleration> tolerations;
  CapacityRequirements capacity;
};

// Exactly one of `exactly` and `first_available` is set.
struct DeviceRequest : JsonObject<DeviceRequest> {
  std::string name;
  ExactDeviceRequest exactly;
  std::vector<DeviceSubRequest> first_available;
};

struct DeviceConstraint : JsonObject<DeviceConstraint> {
  std::vector<std::string> requests;  // empty: all
  std::string match_attribute;
  std::string distinct_attribute;
};

struct OpaqueDeviceConfiguration : JsonObject<OpaqueDeviceConfiguration> {
  std::string driver;
  nlohmann::json parameters;  // any object, conventionally with apiVersion and kind
};

struct DeviceClaimConfiguration : JsonObject<DeviceClaimConfiguration> {
  std::vector<std::string> requests;  // empty: all
  OpaqueDeviceConfiguration opaque;
};

struct DeviceClaim : JsonObject<DeviceClaim> {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;
};

struct ResourceClaimSpec : JsonObject<ResourceClaimSpec> {
  DeviceClaim devices;
};

struct DeviceRequestAllocationResult : JsonObject<DeviceRequestAllocationResult> {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::string share_id;                                  // "shareID"
  std::map<std::string, std::string> consumed_capacity;  // quantities
};

struct DeviceAllocationConfiguration : JsonObject<DeviceAllocationConfiguration> {
  std::string source;  // FromClass, FromClaim
  std::vector<std::string> requests;
  OpaqueDeviceConfiguration opaque;
};

struct DeviceAllocationResult : JsonObject<DeviceAllocationResult> {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
};

struct AllocationResult : JsonObject<AllocationResult> {
  DeviceAllocationResult devices;
  nlohmann::json node_selector;  // core/v1 NodeSelector
  std::string allocation_timestamp;
};

struct ResourceClaimConsumerReference : JsonObject<ResourceClaimConsumerReference> {
  std::string api_group;
  std::string resource;  // "pods"
  std::string name;
  std::string uid;
};

// What a driver reports about one allocated device.
struct AllocatedDeviceStatus : JsonObject<AllocatedDeviceStatus> {
  std::string driver;
  std::string pool;
  std::string device;
  std::string share_id;
  nlohmann::json conditions;    // []metav1.Condition
  nlohmann::json data;          // any object
  nlohmann::json network_data;  // NetworkDeviceData
};

struct ResourceClaimStatus : JsonObject<ResourceClaimStatus> {
  AllocationResult allocation;  // IsEmpty() until the scheduler allocates
  std::vector<ResourceClaimConsumerReference> reserved_for;
  std::vector<AllocatedDeviceStatus> devices;
};

struct ResourceClaim : JsonObject<ResourceClaim> {
  std::string api_version = kResourceApiVersion;
  std::string kind = "ResourceClaim";
  ObjectMeta metadata;
  ResourceClaimSpec spec;
  ResourceClaimStatus status;
};

// --- ResourceClaimTemplate, DeviceClass, DeviceTaintRule --------------------

struct ResourceClaimTemplateSpec : JsonObject<ResourceClaimTemplateSpec> {
  ObjectMeta metadata;  // labels and annotations copied to each claim
  ResourceClaimSpec spec;
};

struct ResourceClaimTemplate : JsonObject<ResourceClaimTemplate> {
  std::string api_version = kResourceApiVersion;
  std::string kind = "ResourceClaimTemplate";
  ObjectMeta metadata;
  ResourceClaimTemplateSpec spec;
};

struct DeviceClassConfiguration : JsonObject<DeviceClassConfiguration> {
  OpaqueDeviceConfiguration opaque;
};

struct DeviceClassSpec : JsonObject<DeviceClassSpec> {
  std::vector<DeviceSelector> selectors;
  std::vector<DeviceClassConfiguration> config;
  std::string extended_resource_name;
};

struct DeviceClass : JsonObject<DeviceClass> {
  std::string api_version = kResourceApiVersion;
  std::string kind = "DeviceClass";
  ObjectMeta metadata;
  DeviceClassSpec spec;
};

// Which devices a DeviceTaintRule taints; unset fields match every value.
struct DeviceTaintSelector : JsonObject<DeviceTaintSelector> {
  std::string driver;
  std::string pool;
  std::string device;
};

struct DeviceTaintRuleSpec : JsonObject<DeviceTaintRuleSpec> {
  DeviceTaintSelector device_selector;
  DeviceTaint taint;
};

// Kubernetes 1.34 serves DeviceTaintRule only as v1alpha3 (behind the
// DRADeviceTaints gate); later releases add v1 with the same fields. Set
// api_version for the server at hand.
struct DeviceTaintRule : JsonObject<DeviceTaintRule> {
  std::string api_version = kResourceApiVersion;
  std::string kind = "DeviceTaintRule";
  ObjectMeta metadata;
  DeviceTaintRuleSpec spec;
};

}  // namespace canhazgpu::kube
