#include "kubesim/validation.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubesim/openapi_documents.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const ResourceType& Type(const std::string& resource) {
  static const ResourceTypes types = ResourceTypes::BuiltIn();
  const std::string group = resource == "pods" ? "" : "resource.k8s.io";
  return *types.Find(group, "v1", resource);
}

json Slice(int devices) {
  json list = json::array();
  for (int i = 0; i < devices; ++i) {
    list.push_back({{"name", "gpu-" + std::to_string(i)},
                    {"attributes", {{"productName", {{"string", "H100"}}}}},
                    {"capacity", {{"memory", {{"value", "80Gi"}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", "s"}}},
          {"spec",
           {{"driver", "gpu.canhazgpu.dev"},
            {"nodeName", "node1"},
            {"pool", {{"name", "node1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", list}}}};
}

std::vector<std::string> Fields(const Validation& v) {
  std::vector<std::string> out;
  for (const kube::StatusCause& c : v.causes) out.push_back(c.field + " " + c.reason);
  return out;
}

TEST(ValidationTest, AValidSliceAndPodPass) {
  json slice = Slice(128);
  Validation v = Validate(Type("resourceslices"), slice);
  EXPECT_FALSE(v.decode_error.has_value()) << *v.decode_error;
  EXPECT_TRUE(v.causes.empty()) << ::testing::PrintToString(Fields(v));
  json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  v = Validate(Type("pods"), pod);
  EXPECT_TRUE(v.causes.empty()) << ::testing::PrintToString(Fields(v));
}

TEST(ValidationTest, SliceLimitsAndRulesAreCausesNamingTheField) {
  json slice = Slice(129);
  slice["spec"]["devices"][1]["name"] = "gpu-0";
  slice["spec"]["devices"][2]["name"] = "Not_A_Label";
  slice["spec"]["devices"][3]["attributes"]["bad"] = {{"int", 1}, {"string", "x"}};
  slice["spec"]["allNodes"] = true;
  slice["spec"]["pool"]["resourceSliceCount"] = 0;
  Validation v = Validate(Type("resourceslices"), slice);
  EXPECT_THAT(Fields(v), ::testing::IsSupersetOf({
                             "spec.devices FieldValueTooMany",
                             "spec.devices[1].name FieldValueDuplicate",
                             "spec.devices[2].name FieldValueInvalid",
                             "spec.devices[3].attributes[bad] FieldValueInvalid",
                             "spec FieldValueRequired",
                             "spec.pool.resourceSliceCount FieldValueInvalid",
                         }));
  const kube::ApiStatus status =
      kube::InvalidStatus("resource.k8s.io", "ResourceSlice", "s", v.causes);
  EXPECT_EQ(status.code, 422);
  EXPECT_THAT(status.message, HasSubstr("ResourceSlice.resource.k8s.io \"s\" is invalid: ["));
}

TEST(ValidationTest, RequiredFieldsComeFromTheSchema) {
  json slice = Slice(1);
  slice["spec"].erase("driver");
  Validation v = Validate(Type("resourceslices"), slice);
  EXPECT_THAT(Fields(v), ::testing::Contains("spec.driver FieldValueRequired"));
}

TEST(ValidationTest, WrongTypesAreDecodeErrors) {
  json slice = Slice(1);
  slice["spec"]["pool"] = "node1";
  Validation v = Validate(Type("resourceslices"), slice);
  ASSERT_TRUE(v.decode_error.has_value());
  EXPECT_THAT(*v.decode_error, HasSubstr("cannot unmarshal string into field spec.pool"));
}

TEST(ValidationTest, UnknownFieldsAreDroppedAndListed) {
  json slice = Slice(1);
  slice["spec"]["futureField"] = 1;
  slice["spec"]["devices"][0]["alsoNew"] = true;
  Validation v = Validate(Type("resourceslices"), slice);
  EXPECT_TRUE(v.causes.empty());
  EXPECT_THAT(v.unknown_fields,
              ::testing::UnorderedElementsAre("spec.futureField", "spec.devices[0].alsoNew"));
  EXPECT_FALSE(slice["spec"].contains("futureField"));
}

TEST(ValidationTest, ClaimRulesAndImmutableSpec) {
  json claim = {{"metadata", {{"name", "c"}}},
                {"spec",
                 {{"devices",
                   {{"requests",
                     {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}},
                      {{"name", "both"},
                       {"exactly", {{"deviceClassName", "x"}}},
                       {"firstAvailable", {{{"name", "a"}, {"deviceClassName", "x"}}}}},
                      {{"name", "mode"},
                       {"exactly", {{"deviceClassName", "x"}, {"allocationMode", "Some"}}}}}}}}}}};
  Validation v = Validate(Type("resourceclaims"), claim);
  EXPECT_THAT(Fields(v),
              ::testing::UnorderedElementsAre(
                  "spec.devices.requests[1] FieldValueInvalid",
                  "spec.devices.requests[2].exactly.allocationMode FieldValueNotSupported"));
  json valid = claim;
  valid["spec"]["devices"]["requests"].erase(1);
  valid["spec"]["devices"]["requests"].erase(1);
  json changed = valid;
  changed["spec"]["devices"]["requests"][0]["name"] = "other";
  v = Validate(Type("resourceclaims"), changed, &valid);
  EXPECT_THAT(Fields(v), ::testing::ElementsAre("spec FieldValueInvalid"));
  EXPECT_THAT(v.causes[0].message, HasSubstr("field is immutable"));
}

// A driver's status.devices, as validateDeviceStatus checks them: an
// allocated device (a share by its shareID), each once, conditions as
// metav1 wants them, data an object.
TEST(ValidationTest, DeviceStatusesNameAllocatedDevicesOnce) {
  const std::string share = "6a1f3c9e-0b7d-4e2a-9c55-1d2e3f4a5b6c";
  auto entry = [](const std::string& device, const std::string& share_id) {
    json e = {{"driver", "gpu.canhazgpu.dev"},
              {"pool", "node1"},
              {"device", device},
              {"conditions",
               {{{"type", "Ready"},
                 {"status", "True"},
                 {"reason", "Prepared"},
                 {"message", ""},
                 {"lastTransitionTime", "2026-11-29T13:00:00Z"}}}},
              {"data", {{"memory", "10Gi"}}}};
    if (!share_id.empty()) e["shareID"] = share_id;
    return e;
  };
  json result = {{"request", "gpu"}, {"driver", "gpu.canhazgpu.dev"},
                 {"pool", "node1"},  {"device", "gpu-0"},
                 {"shareID", share}, {"consumedCapacity", {{"memory", "10Gi"}}}};
  json claim = {
      {"metadata", {{"name", "c"}}},
      {"spec",
       {{"devices",
         {{"requests",
           {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}},
      {"status",
       {{"allocation", {{"devices", {{"results", {result}}}}}},
        {"devices", {entry("gpu-0", share)}}}}};
  Validation v = Validate(Type("resourceclaims"), claim);
  EXPECT_TRUE(v.causes.empty()) << ::testing::PrintToString(Fields(v));

  json bad = claim;
  json& devices = bad["status"]["devices"];
  devices.push_back(entry("gpu-0", share));  // twice
  devices.push_back(entry("gpu-0", ""));     // the device, not the share allocated
  devices.push_back(entry("gpu-1", ""));     // never allocated
  devices[0]["conditions"][0]["status"] = "Maybe";
  devices[0]["conditions"][0].erase("lastTransitionTime");  // the schema's Required
  devices[0]["conditions"][0]["reason"] = "";
  devices[1]["data"] = {{"blob", std::string(11 * 1024, 'x')}};  // over 10 KiB
  v = Validate(Type("resourceclaims"), bad);
  EXPECT_THAT(
      Fields(v),
      ::testing::UnorderedElementsAre(
          "status.devices[0].conditions[0].status FieldValueNotSupported",
          "status.devices[0].conditions[0].lastTransitionTime FieldValueRequired",
          "status.devices[0].conditions[0].reason FieldValueRequired",
          "status.devices[1] FieldValueDuplicate", "status.devices[1].data FieldValueTooLong",
          "status.devices[2] FieldValueInvalid", "status.devices[3] FieldValueInvalid"));
  for (const kube::StatusCause& c : v.causes) {
    if (c.field == "status.devices[3]") {
      EXPECT_EQ(c.message,
                "Invalid value: \"gpu.canhazgpu.dev/node1/gpu-1\": must be an allocated device "
                "in the claim");
    }
  }
}

// Issue 30: selectors that do not compile were stored, to fail later at
// scheduling.
TEST(ValidationTest, CelSelectorsAreCompiledWhenWritten) {
  auto selector = [](const std::string& expression) {
    return json{{"cel", {{"expression", expression}}}};
  };
  json device_class = {{"metadata", {{"name", "gpu.example.com"}}},
                       {"spec",
                        {{"selectors",
                          {selector("device.driver == \"gpu.example.com\""),
                           selector("memory >= quantity(\"40Gi\")")}}}}};
  Validation v = Validate(Type("deviceclasses"), device_class);
  EXPECT_THAT(Fields(v),
              ::testing::ElementsAre("spec.selectors[1].cel.expression FieldValueInvalid"));
  ASSERT_EQ(v.causes.size(), 1u);
  EXPECT_THAT(v.causes[0].message,
              ::testing::StartsWith("Invalid value: \"memory >= quantity(\\\"40Gi\\\")\": "
                                    "compilation failed: ERROR: <input>:1:1:"));
  EXPECT_THAT(v.causes[0].message, HasSubstr("\n | memory >= quantity(\"40Gi\")\n | ^"));

  // A `#` comment is not CEL; a request's and an alternative's selectors
  // are checked, in a claim and in a template.
  const json bad = json::array({selector("device.driver == \"x\" # the vendor")});
  const json request = {{"name", "gpu"},
                        {"exactly", {{"deviceClassName", "x"}, {"selectors", bad}}}};
  const json alternatives = {
      {"name", "any"},
      {"firstAvailable", {{{"name", "big"}, {"deviceClassName", "x"}, {"selectors", bad}}}}};
  json claim = {{"metadata", {{"name", "c"}}},
                {"spec", {{"devices", {{"requests", {request, alternatives}}}}}}};
  EXPECT_THAT(Fields(Validate(Type("resourceclaims"), claim)),
              ::testing::ElementsAre(
                  "spec.devices.requests[0].exactly.selectors[0].cel.expression FieldValueInvalid",
                  "spec.devices.requests[1].firstAvailable[0].selectors[0].cel.expression "
                  "FieldValueInvalid"));
  json claim_template = {{"metadata", {{"name", "t"}}}, {"spec", {{"spec", claim["spec"]}}}};
  EXPECT_EQ(Validate(Type("resourceclaimtemplates"), claim_template).causes.size(), 2u);

  // What the server already stored stays writable (a label added to an old
  // class); a changed expression is compiled.
  json stored = device_class;
  json relabelled = device_class;
  relabelled["metadata"]["labels"] = {{"team", "ml"}};
  EXPECT_TRUE(Validate(Type("deviceclasses"), relabelled, &stored).causes.empty());
  relabelled["spec"]["selectors"][0] = selector("device.driver ==");
  EXPECT_EQ(Validate(Type("deviceclasses"), relabelled, &stored).causes.size(), 1u);
}

TEST(ValidationTest, ServesTheDocumentsItValidatesAgainst) {
  const json* doc = OpenApiDocumentFor("apis/resource.k8s.io/v1");
  ASSERT_NE(doc, nullptr);
  EXPECT_TRUE((*doc)["components"]["schemas"].contains("io.k8s.api.resource.v1.ResourceSlice"));
  EXPECT_EQ(OpenApiDocumentFor("apis/nope/v1"), nullptr);
}

TEST(ValidationTest, CompiledInDocumentsAreTheSharedSchemasByteForByte) {
  const std::filesystem::path dir = SHARED_SCHEMAS_DIR;
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << dir << " is not on this machine: the drift check does not run";
  }
  for (const OpenApiDocument& doc : OpenApiDocuments()) {
    std::string name(doc.group_version_path);  // "apis/resource.k8s.io/v1"
    for (size_t at; (at = name.find('/')) != std::string::npos;) name.replace(at, 1, "__");
    std::ifstream in(dir / (name + "_openapi.json"), std::ios::binary);
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(text.str() == doc.json) << name << " differs from " << dir;
  }
}

}  // namespace
}  // namespace canhazgpu::kubesim
