// The consumable-capacity rules through Validate, as a client meets them.
#include "kubesim/capacity_rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/validation.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const ResourceType& ResourceTypeNamed(const std::string& resource) {
  static const ResourceTypes types = ResourceTypes::BuiltIn();
  return *types.Find("resource.k8s.io", "v1", resource);
}

// A slice with one shared GPU whose memory capacity is `capacity`.
json SharedSlice(json capacity, bool multiple = true) {
  json device = {{"name", "gpu-0"}, {"capacity", {{"memory", capacity}}}};
  if (multiple) device["allowMultipleAllocations"] = true;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", "s"}}},
          {"spec",
           {{"driver", "gpu.canhazgpu.dev"},
            {"nodeName", "node1"},
            {"pool", {{"name", "node1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", {device}}}}};
}

// "field reason: message" of every cause.
std::vector<std::string> Causes(json object, const std::string& resource) {
  Validation v = Validate(ResourceTypeNamed(resource), object);
  std::vector<std::string> out;
  for (const kube::StatusCause& c : v.causes) {
    out.push_back(c.field + " " + c.reason + ": " + c.message);
    EXPECT_EQ(c.message.find('\n'), std::string::npos);
  }
  return out;
}

TEST(CapacityRulesTest, OurPublishedPolicyAndAValidValuesPolicyPass) {
  EXPECT_THAT(Causes(SharedSlice(json::parse(R"({"value": "40448Mi", "requestPolicy": {
      "default": "40448Mi", "validRange": {"min": "1Mi", "max": "40448Mi", "step": "1Mi"}}})")),
                     "resourceslices"),
              IsEmpty());
  EXPECT_THAT(Causes(SharedSlice(json::parse(R"({"value": "80Gi", "requestPolicy": {
      "default": "20Gi", "validValues": ["10Gi", "20Gi", "80Gi"]}})")),
                     "resourceslices"),
              IsEmpty());
  EXPECT_THAT(Causes(SharedSlice(json::parse(R"({"value": "80Gi"})")), "resourceslices"),
              IsEmpty());
}

TEST(CapacityRulesTest, PolicyRulesNameTheirField) {
  const std::string at = "spec.devices[0].capacity[memory].requestPolicy";
  struct Case {
    const char* capacity;
    bool multiple;
    std::string cause;
  };
  const Case cases[] = {
      {R"({"value": "80Gi", "requestPolicy": {"default": "80Gi"}})", false,
       at + " FieldValueForbidden: Forbidden: requires allowMultipleAllocations to be true"},
      {R"({"value": "80Gi", "requestPolicy": {"validValues": ["1Gi"], "validRange": {"min": "1Gi"}}})",
       true, at + " FieldValueForbidden"},
      {R"({"value": "80Gi", "requestPolicy": {"default": "90Gi"}})", true,
       at + ".default FieldValueInvalid: Invalid value: \"90Gi\": must be less than or equal to "
            "capacity value"},
      {R"({"value": "80Gi", "requestPolicy": {"validValues": ["20Gi", "10Gi"]}})", true,
       at + ".validValues[1] FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"default": "30Gi", "validValues": ["10Gi", "20Gi"]}})",
       true, at + ".validValues FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"validValues": ["1","2","3","4","5","6","7","8","9","10","11"]}})",
       true, at + ".validValues FieldValueTooMany"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"max": "8Gi"}}})", true,
       at + ".validRange.min FieldValueRequired"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"min": "81Gi"}}})", true,
       at + ".validRange.min FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"default": "1Mi", "validRange": {"min": "1Gi"}}})",
       true, at + ".default FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"min": "1Gi", "max": "90Gi"}}})", true,
       at + ".validRange.max FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"min": "1Gi", "step": "80Gi"}}})",
       true,
       at + ".validRange.step FieldValueInvalid: Invalid value: \"80Gi\": min + step must be less "
            "than or equal to capacity value"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"min": "2", "max": "7", "step": "2"}}})",
       true, at + ".validRange.max FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"validRange": {"min": "1Gi", "step": "0"}}})", true,
       at + ".validRange.step FieldValueInvalid"},
      {R"({"value": "80Gi", "requestPolicy": {"default": "lots"}})", true,
       at + ".default FieldValueInvalid: Invalid value: \"lots\": must be a quantity"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> causes =
        Causes(SharedSlice(json::parse(c.capacity), c.multiple), "resourceslices");
    ASSERT_EQ(causes.size(), 1u) << c.capacity << ": " << ::testing::PrintToString(causes);
    EXPECT_THAT(causes[0], ::testing::StartsWith(c.cause)) << c.capacity;
  }
}

TEST(CapacityRulesTest, NegativeCapacityRequestsAreRefused) {
  json claim = json::parse(R"({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
      {"name": "a", "exactly": {"deviceClassName": "g", "capacity": {"requests": {"memory": "-1Gi"}}}},
      {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "g",
        "capacity": {"requests": {"memory": "10Gi"}}},
        {"name": "y", "deviceClassName": "g", "capacity": {"requests": {"memory": "nope"}}}]}]}}})");
  EXPECT_THAT(Causes(claim, "resourceclaims"),
              UnorderedElementsAre(
                  HasSubstr("spec.devices.requests[0].exactly.capacity.requests[memory] "
                            "FieldValueInvalid: Invalid value: \"-1Gi\": must be greater than or "
                            "equal to 0"),
                  HasSubstr("spec.devices.requests[1].firstAvailable[1].capacity.requests[memory] "
                            "FieldValueInvalid")));
}

TEST(CapacityRulesTest, ShareIdsMustBeLowercaseUuids) {
  json claim = json::parse(R"({"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
      {"name": "a", "exactly": {"deviceClassName": "g"}}]}},
    "status": {"allocation": {"devices": {"results": [
      {"request": "a", "driver": "d", "pool": "p", "device": "gpu-0",
       "shareID": "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "consumedCapacity": {"memory": "10Gi"}},
      {"request": "a", "driver": "d", "pool": "p", "device": "gpu-1", "shareID": "SHARE-1"}]}},
     "devices": [{"driver": "d", "pool": "p", "device": "gpu-0", "shareID": "0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9"}]}})");
  EXPECT_THAT(Causes(claim, "resourceclaims"),
              ElementsAre(HasSubstr("status.allocation.devices.results[1].shareID "
                                    "FieldValueInvalid: Invalid value: \"SHARE-1\": must be a "
                                    "lowercase UUID in 8-4-4-4-12 format"),
                          HasSubstr("status.devices[0].shareID FieldValueInvalid"),
                          // and so it names no allocated share
                          HasSubstr("status.devices[0] FieldValueInvalid: Invalid value: "
                                    "\"d/p/gpu-0/0F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9\": must "
                                    "be an allocated device in the claim")));
}

}  // namespace
}  // namespace canhazgpu::kubesim
