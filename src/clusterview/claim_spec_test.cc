#include "clusterview/claim_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<dra::Claim> Convert(const nlohmann::json& spec) {
  auto typed = kube::ResourceClaimSpec::FromJson(spec);
  EXPECT_TRUE(typed.ok()) << typed.status();
  return ClaimFromSpec(*typed, "default/c");
}

TEST(ClaimSpecTest, EveryKindOfRequestAndConstraint) {
  auto claim = Convert(R"({"devices": {
    "requests": [
      {"name": "gpu", "exactly": {"deviceClassName": "gpu.canhazgpu.dev", "count": 2,
        "selectors": [{"cel": {"expression": "device.attributes['gpu.canhazgpu.dev'].index > 0"}}],
        "tolerations": [{"key": "gpu.canhazgpu.dev/xid", "operator": "Exists", "effect": "NoSchedule"}]}},
      {"name": "all", "exactly": {"deviceClassName": "mig.canhazgpu.dev", "allocationMode": "All"}},
      {"name": "admin", "exactly": {"deviceClassName": "gpu.canhazgpu.dev", "adminAccess": true}},
      {"name": "pick", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.canhazgpu.dev"},
        {"name": "small", "deviceClassName": "mig.canhazgpu.dev", "count": 2}]}],
    "constraints": [
      {"requests": ["gpu", "pick/big"], "matchAttribute": "gpu.canhazgpu.dev/productName"},
      {"distinctAttribute": "gpu.canhazgpu.dev/uuid"}]}})"_json);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->name, "default/c");
  ASSERT_EQ(claim->requests.size(), 4u);
  const dra::RequestSpec& gpu = claim->requests[0].alternatives[0];
  EXPECT_EQ(gpu.device_class, "gpu.canhazgpu.dev");
  EXPECT_EQ(gpu.count, 2);
  EXPECT_FALSE(gpu.all);
  EXPECT_THAT(gpu.selectors, ElementsAre("device.attributes['gpu.canhazgpu.dev'].index > 0"));
  ASSERT_EQ(gpu.tolerations.size(), 1u);
  EXPECT_EQ(gpu.tolerations[0].op, "Exists");
  EXPECT_EQ(gpu.tolerations[0].effect, "NoSchedule");
  EXPECT_TRUE(claim->requests[1].alternatives[0].all);
  EXPECT_TRUE(claim->requests[2].alternatives[0].admin_access);
  EXPECT_EQ(claim->requests[2].alternatives[0].count, 1);
  EXPECT_TRUE(claim->requests[3].first_available);
  ASSERT_EQ(claim->requests[3].alternatives.size(), 2u);
  EXPECT_EQ(claim->requests[3].alternatives[1].name, "small");
  EXPECT_EQ(claim->requests[3].alternatives[1].count, 2);
  ASSERT_EQ(claim->constraints.size(), 2u);
  EXPECT_THAT(claim->constraints[0].requests, ElementsAre("gpu", "pick/big"));
  EXPECT_EQ(claim->constraints[1].distinct_attribute, "gpu.canhazgpu.dev/uuid");
}

TEST(ClaimSpecTest, CapacityRequestsInExactlyAndFirstAvailable) {
  auto claim = Convert(R"({"devices": {"requests": [
      {"name": "gpu", "exactly": {"deviceClassName": "gpu.canhazgpu.dev",
        "capacity": {"requests": {"memory": "10Gi"}}}},
      {"name": "pick", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.canhazgpu.dev",
         "capacity": {"requests": {"memory": "40Gi", "cores": "50"}}},
        {"name": "any", "deviceClassName": "gpu.canhazgpu.dev"}]}]}})"_json);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->requests[0].alternatives[0].capacity_requests,
            (std::map<std::string, int64_t>{{"memory", int64_t{10} << 30}}));
  EXPECT_EQ(claim->requests[1].alternatives[0].capacity_requests,
            (std::map<std::string, int64_t>{{"cores", 50}, {"memory", int64_t{40} << 30}}));
  EXPECT_TRUE(claim->requests[1].alternatives[1].capacity_requests.empty());
}

TEST(ClaimSpecTest, MalformedClaimsAreRefusedInOneLine) {
  struct Case {
    const char* spec;
    const char* error;
  };
  const Case cases[] = {
      {R"({"devices": {}})", "the claim has no requests"},
      {R"({"devices": {"requests": [{"name": "gpu"}]}})",
       "request gpu: needs exactly one of exactly and firstAvailable"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "allocationMode": "Some"}}]}})",
       "request gpu: unknown allocationMode 'Some' (ExactCount or All)"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "count": 0}}]}})",
       "request gpu: count 0 must be at least 1"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "allocationMode": "All", "count": 2}}]}})",
       "request gpu: count must not be set with allocationMode All"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"selectors": [{"cel": {"expression": "true"}}]}}]}})",
       "request gpu: deviceClassName is required"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "selectors": [{"cel": {}}]}}]}})",
       "request gpu: selector #0 has no cel.expression"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "tolerations": [{"key": "k", "operator": "Maybe"}]}}]}})",
       "request gpu: toleration k: unknown operator 'Maybe' (Equal or Exists)"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}]}})",
       "request gpu: toleration k: operator Exists takes no value"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}, {"name": "gpu", "exactly": {"deviceClassName": "g"}}]}})",
       "request name 'gpu' is empty or repeated"},
      {R"({"devices": {"requests": [{"name": "p", "firstAvailable": [{"name": "a", "deviceClassName": "g"}, {"name": "a", "deviceClassName": "g"}]}]}})",
       "request p: firstAvailable: sub-request name 'a' is empty or repeated"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}], "constraints": [{"matchAttribute": "productName"}]}})",
       "constraint attribute 'productName' must be fully qualified"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}], "constraints": [{"requests": ["cpu"], "matchAttribute": "a.b/c"}]}})",
       "constraint on a.b/c names request 'cpu' that the claim does not have"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}], "constraints": [{}]}})",
       "a constraint needs exactly one of matchAttribute and distinctAttribute"},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "capacity": {"requests": {"memory": "ten gigs"}}}}]}})",
       "request gpu: capacity.requests.memory: "},
      {R"({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "capacity": {"requests": {"memory": "-1Gi"}}}}]}})",
       "request gpu: capacity.requests.memory: '-1Gi' must not be negative"},
      {R"({"devices": {"requests": [{"name": "p", "firstAvailable": [{"name": "a", "deviceClassName": "g", "capacity": {"requests": {"memory": "1Qi"}}}]}]}})",
       "request p: firstAvailable a: capacity.requests.memory: "},
  };
  for (const Case& c : cases) {
    auto claim = Convert(nlohmann::json::parse(c.spec));
    ASSERT_FALSE(claim.ok()) << c.spec;
    EXPECT_TRUE(absl::IsInvalidArgument(claim.status())) << claim.status();
    EXPECT_THAT(std::string(claim.status().message()), HasSubstr(c.error)) << c.spec;
    EXPECT_EQ(claim.status().message().find('\n'), std::string::npos);
  }
}

TEST(ClaimSpecTest, DeviceClassSelectors) {
  auto cls = kube::DeviceClass::FromJson(R"({"metadata": {"name": "gpu.canhazgpu.dev"},
    "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.canhazgpu.dev'"}}]}})"_json);
  ASSERT_TRUE(cls.ok());
  auto converted = DeviceClassFrom(*cls);
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(converted->name, "gpu.canhazgpu.dev");
  EXPECT_THAT(converted->selectors, ElementsAre("device.driver == 'gpu.canhazgpu.dev'"));
  cls->spec.selectors[0].cel.expression = "";
  EXPECT_THAT(std::string(DeviceClassFrom(*cls).status().message()),
              HasSubstr("device class gpu.canhazgpu.dev: selector #0 has no cel.expression"));
}

}  // namespace
}  // namespace canhazgpu::clusterview
