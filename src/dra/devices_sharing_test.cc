// GPUs published for sharing by memory (ADR 0018), and the slice that
// carries them checked against the official 1.34 OpenAPI schema.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dra/capacity.h"
#include "dra/devices.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::dra {
namespace {

using testing::TestGpu;
using testing::TestMigGpu;

constexpr int64_t kOneMiB = int64_t{1} << 20;

TEST(DevicesSharingTest, DefaultOptionsPublishExactlyWhatTheyDidBefore) {
  DevicePool plain = BuildDevicePool({TestGpu(0), TestMigGpu(1)}, "n");
  for (const Device& d : plain.devices) {
    EXPECT_FALSE(d.allow_multiple_allocations);
    EXPECT_TRUE(d.request_policies.empty());
    EXPECT_FALSE(d.attributes.contains(kMemoryIsolationAttribute));
    EXPECT_FALSE(DeviceJson(d).contains("allowMultipleAllocations"));
  }
  EXPECT_EQ(DeviceJson(plain.devices[0])["capacity"].dump(), R"({"memory":{"value":"40Gi"}})");
}

TEST(DevicesSharingTest, ShareableGpuHasAPolicyOfMiBStepsDefaultingToTheWhole) {
  GpuInfo odd = TestGpu(1);
  odd.memory_total_bytes = 81559 * kMiB + 12345;  // not a whole MiB
  DevicePool pool =
      BuildDevicePool({TestGpu(0), odd, TestMigGpu(2)}, "n",
                      {.sharing = true, .reserved_bytes = 512 * kOneMiB, .isolation = "mps"});
  const Device& gpu0 = pool.devices[0];
  EXPECT_TRUE(gpu0.allow_multiple_allocations);
  EXPECT_EQ(gpu0.capacity.at("memory"), (40960 - 512) * kOneMiB);
  EXPECT_EQ(gpu0.request_policies.at("memory"),
            (CapacityRequestPolicy{
                (40960 - 512) * kOneMiB, {}, kOneMiB, (40960 - 512) * kOneMiB, kOneMiB}));
  EXPECT_EQ(gpu0.attributes.at("memoryIsolation"), AttributeValue::String("mps"));
  EXPECT_EQ(pool.devices[1].capacity.at("memory"), (81559 - 512) * kOneMiB);  // rounded down
  nlohmann::ordered_json j = DeviceJson(gpu0);
  EXPECT_EQ(j["allowMultipleAllocations"], true);
  EXPECT_EQ(j["capacity"].dump(),
            R"({"memory":{"value":"40448Mi","requestPolicy":{"default":"40448Mi",)"
            R"("validRange":{"min":"1Mi","max":"40448Mi","step":"1Mi"}}}})");
  // A GPU in MIG mode and its instances are never shared.
  for (size_t i = 2; i < pool.devices.size(); ++i) {
    EXPECT_FALSE(pool.devices[i].allow_multiple_allocations) << pool.devices[i].name;
    EXPECT_TRUE(pool.devices[i].request_policies.empty());
  }
}

TEST(DevicesSharingTest, TooLittleMemoryAfterTheMarginIsNotShared) {
  EXPECT_EQ(ShareableMemory(513 * kOneMiB, 512 * kOneMiB), 0);
  EXPECT_EQ(ShareableMemory(514 * kOneMiB, 512 * kOneMiB), 2 * kOneMiB);
  EXPECT_EQ(ShareableMemory(40 * kOneMiB + 5, 0), 40 * kOneMiB);
  GpuInfo tiny = TestGpu(0);
  tiny.memory_total_bytes = 512 * kMiB;
  DevicePool pool = BuildDevicePool({tiny}, "n", {.sharing = true});
  EXPECT_FALSE(pool.devices[0].allow_multiple_allocations);
  EXPECT_EQ(pool.devices[0].capacity.at("memory"), 512 * kOneMiB);
}

std::string SchemaPath() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CANHAZGPU_SCHEMAS")) candidates.push_back(env);
  candidates.push_back(std::string(DRA_SOURCE_ROOT) + "/../shared/schemas");
  candidates.push_back("/work/shared/schemas");
  for (const std::string& c : candidates) {
    std::string path = c + "/kubernetes/apis__resource.k8s.io__v1_openapi.json";
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// The same strict validator tests/schema uses for `canhazgpu devices`.
int Validate(const nlohmann::ordered_json& slice, std::string* output) {
  std::string dir = ::testing::TempDir();
  std::string file = dir + "/shared_slice.json", out = dir + "/shared_slice.out";
  std::ofstream(file) << slice.dump(2);
  std::string cmd = std::string("/usr/bin/python3 ") + DRA_SOURCE_ROOT +
                    "/tests/schema/validate_resource_slice.py " + SchemaPath() + " " + file +
                    " > " + out + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  output->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return rc;
}

TEST(DevicesSharingTest, SharedSliceValidatesAgainstThe134Schema) {
  if (SchemaPath().empty()) GTEST_SKIP() << "shared/schemas not on this machine";
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3 jsonschema missing";
  DevicePool pool = BuildDevicePool({TestGpu(0), TestMigGpu(1)}, "node-a",
                                    {.sharing = true, .isolation = "none"});
  pool.devices[0].request_policies["memory"].valid_values = {};  // validRange only
  nlohmann::ordered_json slice = ResourceSliceJson(pool);
  std::string output;
  EXPECT_EQ(Validate(slice, &output), 0) << output;
  EXPECT_THAT(output, ::testing::HasSubstr("0 errors"));
  // The check can tell: a misspelt policy field fails it.
  slice["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["defualt"] = "1Mi";
  EXPECT_NE(Validate(slice, &output), 0);
  EXPECT_THAT(output, ::testing::HasSubstr("'defualt'"));
}

}  // namespace
}  // namespace canhazgpu::dra
