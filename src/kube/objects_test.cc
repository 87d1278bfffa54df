#include "kube/objects.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kube {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

json ReadFixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(KUBERNETES_FIXTURES_DIR) / name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) {
    keys.insert(key);
  }
  return keys;
}

// The fields of the fixtures' metadata that ObjectMeta does not model.
const std::set<std::string> kUnmodeledMeta = {"selfLink", "deletionGracePeriodSeconds",
                                              "managedFields"};

// Decodes `in` as a T and checks that writing it back gives `in` again, as a
// value and as text (so 7 does not come back as 7.0).
template <typename T>
T ExpectRoundTrip(const json& in, bool also_as_text = true) {
  absl::StatusOr<T> object = T::FromJson(in);
  EXPECT_TRUE(object.ok()) << object.status();
  if (!object.ok()) {
    return T{};
  }
  const json out = object->ToJson();
  EXPECT_EQ(out, in);
  if (also_as_text) {
    EXPECT_EQ(out.dump(), in.dump());
    EXPECT_EQ(object->ToJson(), json::parse(out.dump()));
  }
  return *std::move(object);
}

// --- Round trips of the k8s.io/api fixtures, which set every field ----------

TEST(ObjectsTest, ResourceSliceFixtureRoundTripsAndIsModeled) {
  const json in = ReadFixture("resource.k8s.io.v1.ResourceSlice.json");
  ExpectRoundTrip<ResourceSlice>(json::parse(in.dump()));
  const ResourceSlice slice = ExpectRoundTrip<ResourceSlice>(in);

  // Every field of the slice is modeled: nothing but metadata's extras is
  // unknown, so a misspelt JSON name would show here.
  EXPECT_EQ(Keys(slice.metadata.unknown), kUnmodeledMeta);
  EXPECT_THAT(Keys(slice.unknown), IsEmpty());
  EXPECT_THAT(Keys(slice.spec.unknown), IsEmpty());
  EXPECT_THAT(Keys(slice.spec.pool.unknown), IsEmpty());
  EXPECT_THAT(Keys(slice.spec.shared_counters.at(0).unknown), IsEmpty());
  const Device& device = slice.spec.devices.at(0);
  EXPECT_THAT(Keys(device.unknown), IsEmpty());
  EXPECT_THAT(Keys(device.attributes.at("attributesKey").unknown), IsEmpty());
  EXPECT_THAT(Keys(device.capacity.at("capacityKey").unknown), IsEmpty());
  EXPECT_THAT(Keys(device.consumes_counters.at(0).unknown), IsEmpty());
  EXPECT_THAT(Keys(device.taints.at(0).unknown), IsEmpty());

  EXPECT_EQ(slice.api_version, "resource.k8s.io/v1");
  EXPECT_EQ(slice.metadata.generation, 7);
  EXPECT_EQ(slice.metadata.labels.at("labelsKey"), "labelsValue");
  EXPECT_EQ(slice.metadata.owner_references.at(0).controller, true);
  EXPECT_EQ(slice.spec.pool.resource_slice_count, 3);
  EXPECT_EQ(device.attributes.at("attributesKey").int_value, 2);
  EXPECT_EQ(device.attributes.at("attributesKey").version, "versionValue");
  EXPECT_EQ(device.capacity.at("capacityKey").value, "0");
  const CapacityRequestPolicy& policy = device.capacity.at("capacityKey").request_policy;
  EXPECT_EQ(policy.default_value, "0");
  EXPECT_EQ(policy.valid_values.at(0), "0");
  EXPECT_EQ(policy.valid_range.min, "0");
  EXPECT_EQ(policy.valid_range.step, "0");
  EXPECT_THAT(Keys(policy.unknown), IsEmpty());
  EXPECT_EQ(device.consumes_counters.at(0).counters.at("countersKey").value, "0");
  EXPECT_EQ(device.taints.at(0).time_added, "2004-01-01T01:01:01Z");
  EXPECT_EQ(device.allow_multiple_allocations, true);
  EXPECT_EQ(slice.spec.node_selector["nodeSelectorTerms"].size(), 1u);
}

TEST(ObjectsTest, ResourceClaimFixtureRoundTripsAndIsModeled) {
  const json in = ReadFixture("resource.k8s.io.v1.ResourceClaim.json");
  ExpectRoundTrip<ResourceClaim>(json::parse(in.dump()));
  const ResourceClaim claim = ExpectRoundTrip<ResourceClaim>(in);

  EXPECT_EQ(Keys(claim.metadata.unknown), kUnmodeledMeta);
  const DeviceRequest& request = claim.spec.devices.requests.at(0);
  for (const json* unknown :
       {&claim.unknown, &claim.spec.unknown, &claim.spec.devices.unknown, &request.unknown,
        &request.exactly.unknown, &request.exactly.selectors.at(0).cel.unknown,
        &request.exactly.tolerations.at(0).unknown, &request.exactly.capacity.unknown,
        &request.first_available.at(0).unknown, &claim.spec.devices.constraints.at(0).unknown,
        &claim.spec.devices.config.at(0).opaque.unknown, &claim.status.unknown,
        &claim.status.allocation.unknown, &claim.status.allocation.devices.unknown,
        &claim.status.allocation.devices.results.at(0).unknown,
        &claim.status.allocation.devices.config.at(0).unknown,
        &claim.status.reserved_for.at(0).unknown, &claim.status.devices.at(0).unknown}) {
    EXPECT_THAT(Keys(*unknown), IsEmpty());
  }

  EXPECT_EQ(request.exactly.device_class_name, "deviceClassNameValue");
  EXPECT_EQ(request.exactly.selectors.at(0).cel.expression, "expressionValue");
  EXPECT_EQ(request.exactly.count, 4);
  EXPECT_EQ(request.exactly.tolerations.at(0).op, "operatorValue");
  EXPECT_EQ(request.exactly.tolerations.at(0).toleration_seconds, 5);
  EXPECT_EQ(request.first_available.at(0).count, 5);
  EXPECT_EQ(claim.spec.devices.config.at(0).opaque.parameters["kind"], "CustomType");
  const DeviceRequestAllocationResult& result = claim.status.allocation.devices.results.at(0);
  EXPECT_EQ(result.device, "deviceValue");
  EXPECT_EQ(result.share_id, "shareIDValue");
  EXPECT_EQ(result.consumed_capacity.at("consumedCapacityKey"), "0");
  EXPECT_EQ(claim.status.allocation.allocation_timestamp, "2005-01-01T01:01:01Z");
  EXPECT_EQ(claim.status.reserved_for.at(0).uid, "uidValue");
  EXPECT_EQ(claim.status.devices.at(0).network_data["interfaceName"], "interfaceNameValue");
}

TEST(ObjectsTest, ResourceClaimTemplateFixtureRoundTrips) {
  const json in = ReadFixture("resource.k8s.io.v1.ResourceClaimTemplate.json");
  ExpectRoundTrip<ResourceClaimTemplate>(json::parse(in.dump()));
  const ResourceClaimTemplate claim_template = ExpectRoundTrip<ResourceClaimTemplate>(in);
  EXPECT_EQ(Keys(claim_template.spec.metadata.unknown), kUnmodeledMeta);
  EXPECT_THAT(Keys(claim_template.spec.unknown), IsEmpty());
  EXPECT_EQ(claim_template.spec.spec.devices.requests.at(0).exactly.device_class_name,
            "deviceClassNameValue");
}

TEST(ObjectsTest, DeviceClassFixtureRoundTrips) {
  const json in = ReadFixture("resource.k8s.io.v1.DeviceClass.json");
  ExpectRoundTrip<DeviceClass>(json::parse(in.dump()));
  const DeviceClass device_class = ExpectRoundTrip<DeviceClass>(in);
  EXPECT_THAT(Keys(device_class.spec.unknown), IsEmpty());
  EXPECT_THAT(Keys(device_class.spec.config.at(0).unknown), IsEmpty());
  EXPECT_EQ(device_class.spec.extended_resource_name, "extendedResourceNameValue");
  EXPECT_EQ(device_class.spec.config.at(0).opaque.driver, "driverValue");
}

TEST(ObjectsTest, LeaseFixtureRoundTrips) {
  const json in = ReadFixture("coordination.k8s.io.v1.Lease.json");
  ExpectRoundTrip<Lease>(json::parse(in.dump()));
  const Lease lease = ExpectRoundTrip<Lease>(in);
  EXPECT_EQ(Keys(lease.spec.unknown), (std::set<std::string>{"strategy", "preferredHolder"}));
  EXPECT_EQ(lease.spec.holder_identity, "holderIdentityValue");
  EXPECT_EQ(lease.spec.lease_duration_seconds, 2);
  EXPECT_EQ(lease.spec.acquire_time, "2003-01-01T01:01:01.000003Z");
  EXPECT_EQ(lease.spec.lease_transitions, 5);
}

TEST(ObjectsTest, PodFixtureRoundTrips) {
  const json in = ReadFixture("core.v1.Pod.json");
  ExpectRoundTrip<Pod>(json::parse(in.dump()));
  const Pod pod = ExpectRoundTrip<Pod>(in);
  const Container& container = pod.spec.containers.at(0);
  EXPECT_THAT(Keys(container.resources.unknown), IsEmpty());
  EXPECT_THAT(Keys(container.unknown), Not(testing::Contains("resources")));
  EXPECT_EQ(container.resources.claims.at(0).request, "requestValue");
  EXPECT_EQ(container.resources.limits.at("limitsKey"), "0");
  EXPECT_EQ(container.env.at(0).value_from["fieldRef"]["fieldPath"], "fieldPathValue");
  EXPECT_EQ(pod.spec.init_containers.at(0).name, "nameValue");
  EXPECT_EQ(pod.spec.resource_claims.at(0).resource_claim_template_name,
            "resourceClaimTemplateNameValue");
  EXPECT_EQ(pod.spec.restart_policy, "restartPolicyValue");
  EXPECT_EQ(pod.spec.active_deadline_seconds, 5);
  EXPECT_EQ(pod.status.conditions.at(0).last_probe_time, "2003-01-01T01:01:01Z");
  EXPECT_EQ(pod.status.conditions.at(0).observed_generation, 7);
  EXPECT_EQ(pod.status.resource_claim_statuses.at(0).resource_claim_name, "resourceClaimNameValue");
  EXPECT_TRUE(pod.status.container_statuses.is_array());
}

// The kinds without a fixture, from hand-written objects.
TEST(ObjectsTest, NodeEventConfigMapNamespaceAndTaintRuleRoundTrip) {
  const Node node = ExpectRoundTrip<Node>(json::parse(R"({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "spec": {"podCIDR": "10.0.0.0/24"},
    "status": {"capacity": {"cpu": "8"}, "conditions": [{"type": "Ready", "status": "True",
      "lastHeartbeatTime": "2025-01-01T00:00:00Z"}], "nodeInfo": {"kubeletVersion": "v1.34.0"}}})"));
  EXPECT_EQ(node.status.conditions.at(0).last_heartbeat_time, "2025-01-01T00:00:00Z");
  EXPECT_EQ(node.metadata.labels.at("kubernetes.io/hostname"), "n1");

  const Event event = ExpectRoundTrip<Event>(json::parse(R"({
    "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ml"},
    "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "p", "uid": "u1"},
    "reason": "Prepared", "message": "2 GPUs", "type": "Normal",
    "source": {"component": "k8shazgpu-node", "host": "n1"}, "count": 3,
    "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:01:00Z",
    "eventTime": "2025-01-01T00:00:00.000001Z", "action": "Prepare",
    "reportingComponent": "k8shazgpu", "reportingInstance": "n1", "series": {"count": 2}})"));
  EXPECT_EQ(event.involved_object.namespace_name, "ml");
  EXPECT_EQ(event.count, 3);
  EXPECT_EQ(event.source.host, "n1");

  const ConfigMap config_map = ExpectRoundTrip<ConfigMap>(json::parse(R"({
    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
    "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false})"));
  EXPECT_EQ(config_map.immutable, false);
  EXPECT_EQ(config_map.binary_data.at("b"), "AAE=");

  ExpectRoundTrip<Namespace>(json::parse(R"({"apiVersion": "v1", "kind": "Namespace",
    "metadata": {"name": "ml"}, "spec": {"finalizers": ["kubernetes"]},
    "status": {"phase": "Active"}})"));

  const DeviceTaintRule rule = ExpectRoundTrip<DeviceTaintRule>(json::parse(R"({
    "apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule",
    "metadata": {"name": "r"}, "spec": {"deviceSelector": {"driver": "gpu.example.com",
    "pool": "n1", "device": "gpu-0"}, "taint": {"key": "broken", "value": "ecc",
    "effect": "NoExecute", "timeAdded": "2025-01-01T00:00:00Z"}}})"));
  EXPECT_EQ(rule.spec.device_selector.device, "gpu-0");
  EXPECT_EQ(rule.spec.taint.effect, "NoExecute");
}

// --- Fields we do not model ---------------------------------------------------

TEST(ObjectsTest, UnknownFieldsSurviveAnEditAtEveryLevel) {
  const json future = {{"added", "in 1.40"}, {"nested", {{"list", {1, 2.5, "x"}}}}};
  json slice_json = ReadFixture("resource.k8s.io.v1.ResourceSlice.json");
  slice_json["futureField"] = future;
  slice_json["metadata"]["futureField"] = future;
  slice_json["spec"]["futureField"] = future;
  slice_json["spec"]["devices"][0]["futureField"] = future;
  slice_json["spec"]["devices"][0]["attributes"]["attributesKey"]["futureField"] = future;

  absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(slice_json);
  ASSERT_TRUE(slice.ok()) << slice.status();
  slice->metadata.labels["new"] = "label";
  slice->spec.devices[0].name = "gpu-7";
  slice->spec.devices[0].attributes["attributesKey"].int_value = 9;

  json expected = slice_json;
  expected["metadata"]["labels"]["new"] = "label";
  expected["spec"]["devices"][0]["name"] = "gpu-7";
  expected["spec"]["devices"][0]["attributes"]["attributesKey"]["int"] = 9;
  EXPECT_EQ(slice->ToJson(), expected);

  json claim_json = ReadFixture("resource.k8s.io.v1.ResourceClaim.json");
  claim_json["spec"]["devices"]["requests"][0]["futureField"] = future;
  claim_json["spec"]["devices"]["requests"][0]["exactly"]["futureField"] = future;
  claim_json["status"]["allocation"]["devices"]["results"][0]["futureField"] = future;
  absl::StatusOr<ResourceClaim> claim = ResourceClaim::FromJson(claim_json);
  ASSERT_TRUE(claim.ok()) << claim.status();
  claim->spec.devices.requests[0].exactly.count = 2;
  claim->status.allocation.devices.results[0].device = "gpu-3";

  expected = claim_json;
  expected["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2;
  expected["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-3";
  EXPECT_EQ(claim->ToJson(), expected);
}

TEST(ObjectsTest, ReadObjectsDoNotGainDefaults) {
  // A list's items carry no apiVersion or kind; writing one back must not
  // add them, though a new ResourceSlice has them.
  const json item = {{"metadata", {{"name", "s"}}}, {"spec", {{"driver", "d"}}}};
  absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(item);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->api_version, "");
  EXPECT_EQ(slice->ToJson(), item);
  EXPECT_EQ(ResourceSlice{}.ToJson(),
            json({{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"}}));
}

// --- Clearing, empty and absent ---------------------------------------------

TEST(ObjectsTest, ClearedFieldsDisappear) {
  const json in = ReadFixture("resource.k8s.io.v1.ResourceClaim.json");
  absl::StatusOr<ResourceClaim> claim = ResourceClaim::FromJson(in);
  ASSERT_TRUE(claim.ok()) << claim.status();
  claim->metadata.labels.clear();
  claim->metadata.generate_name.clear();
  claim->metadata.generation.reset();
  claim->spec.devices.requests[0].exactly.admin_access.reset();
  claim->status.allocation = {};
  claim->status.devices[0].data = nullptr;

  json expected = in;
  expected["metadata"].erase("labels");
  expected["metadata"].erase("generateName");
  expected["metadata"].erase("generation");
  expected["spec"]["devices"]["requests"][0]["exactly"].erase("adminAccess");
  expected["status"].erase("allocation");
  expected["status"]["devices"][0].erase("data");
  EXPECT_EQ(claim->ToJson(), expected);
  EXPECT_TRUE(claim->status.allocation.IsEmpty());
}

TEST(ObjectsTest, SetFieldsAppear) {
  const json in = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}};
  absl::StatusOr<ConfigMap> config_map = ConfigMap::FromJson(in);
  ASSERT_TRUE(config_map.ok()) << config_map.status();
  EXPECT_EQ(config_map->ToJson(), in);
  config_map->metadata.labels["app"] = "canhazgpu";
  config_map->data["k"] = "v";
  json expected = in;
  expected["metadata"]["labels"] = {{"app", "canhazgpu"}};
  expected["data"] = {{"k", "v"}};
  EXPECT_EQ(config_map->ToJson(), expected);
}

TEST(ObjectsTest, ExplicitEmptyValuesStayAndAbsentOnesStayAbsent) {
  const json in = json::parse(R"({"metadata": {"name": "s", "labels": {}, "finalizers": [],
    "generateName": "", "uid": null},
    "spec": {"driver": "d", "devices": [{"name": "a", "attributes": {"s": {"string": ""}},
    "capacity": {}}], "pool": {}}})");
  absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(in);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->ToJson(), in);
  EXPECT_EQ(slice->spec.devices[0].attributes["s"].string_value, "");

  // Editing another field keeps the explicit empties and adds nothing.
  slice->spec.driver = "e";
  json expected = in;
  expected["spec"]["driver"] = "e";
  EXPECT_EQ(slice->ToJson(), expected);

  // Filling one in writes it.
  slice->metadata.labels["a"] = "b";
  slice->spec.pool.name = "p";
  expected["metadata"]["labels"] = {{"a", "b"}};
  expected["spec"]["pool"] = {{"name", "p"}};
  EXPECT_EQ(slice->ToJson(), expected);
}

TEST(ObjectsTest, IntegersStayIntegers) {
  const json in = json::parse(R"({"spec": {"pool": {"name": "p", "generation": 9007199254740993,
    "resourceSliceCount": 1}}})");
  absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(in);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->spec.pool.generation, 9007199254740993);
  slice->spec.pool.resource_slice_count = 2;
  EXPECT_EQ(
      slice->ToJson().dump(),
      R"({"spec":{"pool":{"generation":9007199254740993,"name":"p","resourceSliceCount":2}}})");
}

// --- Errors -------------------------------------------------------------------

// The error FromJson gives for the fixture with `pointer` set to `value`.
template <typename T>
std::string ErrorFor(const std::string& fixture, const std::string& pointer, const json& value) {
  json in = ReadFixture(fixture);
  in[json::json_pointer(pointer)] = value;
  absl::StatusOr<T> object = T::FromJson(in);
  EXPECT_FALSE(object.ok()) << pointer;
  EXPECT_EQ(object.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(object.status().message());
}

TEST(ObjectsTest, TypeErrorsNameTheField) {
  const std::string slice = "resource.k8s.io.v1.ResourceSlice.json";
  json devices = ReadFixture(slice)["spec"]["devices"];
  devices.push_back(devices[0]);
  devices.push_back(devices[0]);
  devices.push_back(devices[0]);
  devices[3]["attributes"]["index"] = "7";
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec/devices", devices),
            "spec.devices[3].attributes.index: expected an object with one of int, bool, string, "
            "version, got string");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/metadata/generation", "7"),
            "metadata.generation: expected an integer, got string");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec", json::array()),
            "spec: expected an object, got array");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec/devices", json::object()),
            "spec.devices: expected a list, got object");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/metadata/labels/app", 5),
            "metadata.labels.app: expected a string, got number");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/metadata/finalizers/0", nullptr),
            "metadata.finalizers[0]: expected a string, got null");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec/allNodes", "true"),
            "spec.allNodes: expected a boolean, got string");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec/pool/generation", 1.5),
            "spec.pool.generation: expected an integer, got number");
  EXPECT_EQ(ErrorFor<ResourceSlice>(slice, "/spec/pool/generation", UINT64_MAX),
            "spec.pool.generation: integer 18446744073709551615 is out of range");

  const std::string claim = "resource.k8s.io.v1.ResourceClaim.json";
  EXPECT_EQ(ErrorFor<ResourceClaim>(claim, "/status/allocation/devices/results/0", nullptr),
            "status.allocation.devices.results[0]: expected an object, got null");
  EXPECT_EQ(ErrorFor<ResourceClaim>(claim, "/spec/devices/requests/0/exactly/count", "1"),
            "spec.devices.requests[0].exactly.count: expected an integer, got string");
}

TEST(ObjectsTest, WrongRootsAreErrorsNotCrashes) {
  for (const json& in : {json(nullptr), json::array(), json("pod"), json(7), json(true)}) {
    absl::StatusOr<Pod> pod = Pod::FromJson(in);
    ASSERT_FALSE(pod.ok()) << in;
    EXPECT_THAT(std::string(pod.status().message()), StartsWith("expected an object, got "));
  }
}

// `levels` arrays around a string, built without recursion.
json Nested(int levels) {
  json deep = "bottom";
  for (int i = 0; i < levels; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  return deep;
}

// nlohmann::json copies recursively: values kept as read are accepted up to
// 1,000 levels deep and refused beyond, where a copy could overflow the stack.
TEST(ObjectsTest, DeepNestingIsKeptOrRejected) {
  json in = {{"spec", {{"driver", "d"}}}};
  in["spec"]["nodeSelector"] = Nested(999);
  in["spec"]["futureField"] = Nested(999);
  // Not as text: nlohmann's dump() recurses with frames that ASan makes
  // big enough for 2 x 999 levels to overflow the test's 8 MiB stack.
  ExpectRoundTrip<ResourceSlice>(in, /*also_as_text=*/false);

  for (const char* key : {"nodeSelector", "futureField"}) {
    json too_deep = {{"spec", json::object()}};
    too_deep["spec"][key] = Nested(100'000);
    absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(too_deep);
    ASSERT_FALSE(slice.ok());
    EXPECT_EQ(slice.status().message(),
              "spec." + std::string(key) + ": nested deeper than 1000 levels");
  }

  json wrong_type = {{"spec", json::object()}};
  wrong_type["spec"]["pool"] = Nested(100'000);
  absl::StatusOr<ResourceSlice> slice = ResourceSlice::FromJson(wrong_type);
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().message(), "spec.pool: expected an object, got array");
}

// "/spec/devices/0/name" -> "spec.devices[0].name" (the fixtures' map keys
// are never numbers).
std::string PathOf(const std::string& pointer) {
  std::string path;
  std::stringstream parts(pointer.substr(1));
  for (std::string part; std::getline(parts, part, '/');) {
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      path += "[" + part + "]";
    } else {
      path += (path.empty() ? "" : ".") + part;
    }
  }
  return path;
}

// Replaces values in a fixture, one at a time, with values of each JSON
// type: FromJson either accepts the result and writes it back unchanged, or
// rejects it in one line naming exactly the replaced field. Every value is
// replaced, or, with `under`, those at most two deep and those under one of
// these pointers.
template <typename T>
void ExpectEveryReplacementRoundTripsOrNamesItsPath(const json& original,
                                                    const std::vector<std::string>& under = {}) {
  auto wanted = [&](const std::string& pointer) {
    const bool shallow = std::count(pointer.begin(), pointer.end(), '/') <= 2;
    return under.empty() || shallow || std::any_of(under.begin(), under.end(), [&](auto& p) {
             return pointer.rfind(p, 0) == 0;
           });
  };
  std::set<std::string> pointers = {""};
  const json flat = original.flatten();
  for (const auto& [leaf, value] : flat.items()) {
    for (json::json_pointer p(leaf); !p.empty(); p = p.parent_pointer()) {
      if (wanted(p.to_string())) {
        pointers.insert(p.to_string());
      }
    }
  }
  const json replacements[] = {nullptr, json::array(), json::object(), "s", -1, 2.5, true};
  for (const std::string& pointer : pointers) {
    for (const json& replacement : replacements) {
      json in = original;
      in[json::json_pointer(pointer)] = replacement;
      absl::StatusOr<T> object = T::FromJson(in);
      if (object.ok()) {
        EXPECT_EQ(object->ToJson(), in) << pointer << " = " << replacement;
        continue;
      }
      const std::string message(object.status().message());
      const std::string prefix = pointer.empty() ? "expected " : PathOf(pointer) + ": ";
      EXPECT_THAT(message, StartsWith(prefix)) << pointer << " = " << replacement;
      EXPECT_THAT(message, Not(HasSubstr("\n")));
    }
  }
}

TEST(ObjectsTest, EveryReplacementInTheResourceFixturesRoundTripsOrNamesItsPath) {
  ExpectEveryReplacementRoundTripsOrNamesItsPath<ResourceSlice>(
      ReadFixture("resource.k8s.io.v1.ResourceSlice.json"));
  ExpectEveryReplacementRoundTripsOrNamesItsPath<ResourceClaim>(
      ReadFixture("resource.k8s.io.v1.ResourceClaim.json"));
  ExpectEveryReplacementRoundTripsOrNamesItsPath<ResourceClaimTemplate>(
      ReadFixture("resource.k8s.io.v1.ResourceClaimTemplate.json"));
  ExpectEveryReplacementRoundTripsOrNamesItsPath<DeviceClass>(
      ReadFixture("resource.k8s.io.v1.DeviceClass.json"));
  ExpectEveryReplacementRoundTripsOrNamesItsPath<Lease>(
      ReadFixture("coordination.k8s.io.v1.Lease.json"));
}

// The pod's modeled parts only, in a pod without its largest unmodeled
// parts: replacing each of the fixture's 1,500 values takes seconds.
TEST(ObjectsTest, EveryReplacementInThePodsModeledPartsRoundTripsOrNamesItsPath) {
  json pod = ReadFixture("core.v1.Pod.json");
  for (const char* key : {"volumes", "ephemeralContainers", "affinity", "securityContext"}) {
    pod["spec"].erase(key);
  }
  for (const char* key : {"initContainerStatuses", "ephemeralContainerStatuses"}) {
    pod["status"].erase(key);
  }
  for (json* container : {&pod["spec"]["containers"][0], &pod["spec"]["initContainers"][0]}) {
    for (const char* key :
         {"livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "securityContext"}) {
      container->erase(key);
    }
  }
  ExpectEveryReplacementRoundTripsOrNamesItsPath<Pod>(
      pod, {"/metadata/", "/spec/containers/0/name", "/spec/containers/0/image",
            "/spec/containers/0/command", "/spec/containers/0/args", "/spec/containers/0/env",
            "/spec/containers/0/resources", "/spec/resourceClaims/", "/status/conditions/",
            "/status/resourceClaimStatuses/"});
}

// --- Objects built in code ----------------------------------------------------

TEST(ObjectsTest, SliceBuiltFromScratchIsMinimal) {
  ResourceSlice slice;
  slice.metadata.generate_name = "n1-gpu.example.com-";
  slice.spec.driver = "gpu.example.com";
  slice.spec.pool.name = "n1";
  slice.spec.pool.generation = 0;
  slice.spec.pool.resource_slice_count = 1;
  slice.spec.node_name = "n1";
  for (int i = 0; i < 2; ++i) {
    Device device;
    device.name = "gpu-" + std::to_string(i);
    device.attributes["index"].int_value = i;
    device.attributes["model"].string_value = "H100";
    device.attributes["driverVersion"].version = "560.35.3";
    device.capacity["memory"].value = "80Gi";
    slice.spec.devices.push_back(std::move(device));
  }
  EXPECT_EQ(slice.ToJson(), json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"generateName": "n1-gpu.example.com-"},
    "spec": {"driver": "gpu.example.com", "nodeName": "n1",
      "pool": {"name": "n1", "generation": 0, "resourceSliceCount": 1},
      "devices": [
        {"name": "gpu-0", "attributes": {"index": {"int": 0}, "model": {"string": "H100"},
          "driverVersion": {"version": "560.35.3"}}, "capacity": {"memory": {"value": "80Gi"}}},
        {"name": "gpu-1", "attributes": {"index": {"int": 1}, "model": {"string": "H100"},
          "driverVersion": {"version": "560.35.3"}}, "capacity": {"memory": {"value": "80Gi"}}}
      ]}})"));
}

TEST(ObjectsTest, DeviceStatusBuiltFromScratchIsMinimal) {
  AllocatedDeviceStatus status;
  status.driver = "gpu.example.com";
  status.pool = "n1";
  status.device = "gpu-0";
  status.data = {{"uuid", "GPU-1234"}};
  Condition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.last_transition_time = "2025-01-01T00:00:00Z";
  status.conditions = json::array({ready.ToJson()});
  EXPECT_EQ(status.ToJson(), json::parse(R"({"driver": "gpu.example.com", "pool": "n1",
    "device": "gpu-0", "data": {"uuid": "GPU-1234"}, "conditions": [{"type": "Ready",
    "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]})"));
  EXPECT_FALSE(status.IsEmpty());
  EXPECT_TRUE(AllocatedDeviceStatus{}.IsEmpty());
}

}  // namespace
}  // namespace canhazgpu::kube
