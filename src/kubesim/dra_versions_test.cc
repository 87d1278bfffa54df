#include "kubesim/dra_versions.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

// NVIDIA's gpu-test7 claim template, as published (v1beta1).
const char kBetaTemplate[] = R"({
  "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaimTemplate",
  "metadata": {"name": "gpu"},
  "spec": {"spec": {"devices": {"requests": [
    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2,
     "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index < 2"}}]},
    {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.nvidia.com"}]}]}}}})";

const char kV1Template[] = R"({
  "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
  "metadata": {"name": "gpu"},
  "spec": {"spec": {"devices": {"requests": [
    {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2,
     "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index < 2"}}]}},
    {"name": "any", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.nvidia.com"}]}]}}}})";

TEST(DraVersionsTest, V1beta1RequestsAreFlatAndV1WrapsThemInExactly) {
  EXPECT_EQ(DraToV1("v1beta1", json::parse(kBetaTemplate)), json::parse(kV1Template));
  EXPECT_EQ(DraFromV1("v1beta1", json::parse(kV1Template)), json::parse(kBetaTemplate));
}

TEST(DraVersionsTest, V1beta1DevicesKeepTheirFieldsInBasicAndListsConvertEveryItem) {
  const json v1_slice = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "s"}, "spec": {"driver": "d", "devices": [
      {"name": "gpu-0", "attributes": {"index": {"int": 0}},
       "capacity": {"memory": {"value": "80Gi"}}}]}})");
  const json list = {
      {"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSliceList"}, {"items", {v1_slice}}};
  const json beta = DraFromV1("v1beta1", list);
  EXPECT_EQ(beta["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(beta["items"][0]["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(beta["items"][0]["spec"]["devices"][0],
            json::parse(R"({"name": "gpu-0", "basic": {"attributes": {"index": {"int": 0}},
              "capacity": {"memory": {"value": "80Gi"}}}})"));
  EXPECT_EQ(DraToV1("v1beta1", beta), list);
}

TEST(DraVersionsTest, V1beta2OnlyChangesTheApiVersionAndOtherGroupsAreLeftAlone) {
  json beta2 = DraFromV1("v1beta2", json::parse(kV1Template));
  json expected = json::parse(kV1Template);
  expected["apiVersion"] = "resource.k8s.io/v1beta2";
  EXPECT_EQ(beta2, expected);
  EXPECT_EQ(DraToV1("v1beta2", beta2), json::parse(kV1Template));
  const json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"spec", {{"x", 1}}}};
  EXPECT_EQ(DraFromV1("v1beta1", pod), pod);
  EXPECT_EQ(DraToV1("v1beta1", pod), pod);
}

TEST(DraVersionsTest, ErrorsAreReportedAtTheV1beta1Paths) {
  const json status = json::parse(R"({"kind": "Status", "apiVersion": "v1", "code": 422,
    "message": "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].exactly.count: Invalid value: -1",
    "details": {"causes": [{"field": "spec.devices.requests[0].exactly.count",
                            "message": "Invalid value: -1"},
                           {"field": "spec.devices[3].attributes", "message": "x"},
                           {"field": "spec.devices[3].name", "message": "y"}]}})");
  const json beta = DraFromV1("v1beta1", status);
  EXPECT_EQ(beta["message"],
            "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].count: "
            "Invalid value: -1");
  EXPECT_EQ(beta["details"]["causes"][0]["field"], "spec.devices.requests[0].count");
  EXPECT_EQ(beta["details"]["causes"][1]["field"], "spec.devices[3].basic.attributes");
  EXPECT_EQ(beta["details"]["causes"][2]["field"], "spec.devices[3].name");
  EXPECT_EQ(DraFromV1("v1beta2", status), status);
}

TEST(DraVersionsTest, TheOpenApiDocumentsDescribeTheOlderShapes) {
  const json beta1 = json::parse(OlderDraOpenApiDocument("v1beta1"));
  const json& schemas = beta1["components"]["schemas"];
  const json& request = schemas["io.k8s.api.resource.v1beta1.DeviceRequest"]["properties"];
  EXPECT_TRUE(request.contains("deviceClassName"));
  EXPECT_FALSE(request.contains("exactly"));
  const json& device = schemas["io.k8s.api.resource.v1beta1.Device"]["properties"];
  EXPECT_TRUE(device.contains("basic"));
  EXPECT_FALSE(device.contains("attributes"));
  EXPECT_TRUE(
      schemas["io.k8s.api.resource.v1beta1.BasicDevice"]["properties"].contains("attributes"));
  EXPECT_EQ(schemas["io.k8s.api.resource.v1beta1.ResourceClaim"]["x-kubernetes-group-version-kind"]
                   [0]["version"],
            "v1beta1");
  // kubectl finds the server's field validation by the PATCH operation's kind.
  EXPECT_EQ(beta1["paths"]["/apis/resource.k8s.io/v1beta1/resourceslices/{name}"]["patch"]
                 ["x-kubernetes-group-version-kind"]["version"],
            "v1beta1");
  const json beta2 = json::parse(OlderDraOpenApiDocument("v1beta2"));
  EXPECT_TRUE(beta2["components"]["schemas"].contains("io.k8s.api.resource.v1beta2.Device"));
  EXPECT_TRUE(OlderDraOpenApiDocument("v1alpha3").empty());
}

}  // namespace
}  // namespace canhazgpu::kubesim
