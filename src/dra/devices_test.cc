#include "dra/devices.h"

#include "cel/program.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::dra {
namespace {

using testing::TestGpu;
using testing::TestMigGpu;

TEST(DevicesTest, FullGpuAttributesAreTypedAndNormalized) {
  DevicePool pool = BuildDevicePool({TestGpu(0)}, "node-a");
  ASSERT_EQ(pool.devices.size(), 1u);
  const Device& d = pool.devices[0];
  EXPECT_EQ(d.name, "gpu-0");
  EXPECT_EQ(d.attributes.at("type"), AttributeValue::String("gpu"));
  EXPECT_EQ(d.attributes.at("index"), AttributeValue::Int(0));
  EXPECT_EQ(d.attributes.at("minor"), AttributeValue::Int(0));
  EXPECT_EQ(d.attributes.at("cudaComputeCapability"), AttributeValue::Version("8.0.0"));
  EXPECT_EQ(d.attributes.at("driverVersion"), AttributeValue::Version("535.104.5"));
  EXPECT_EQ(d.attributes.at("cudaDriverVersion"), AttributeValue::Version("12.2.0"));
  EXPECT_EQ(d.attributes.at(kPcieRootAttribute), AttributeValue::String("pci0000:0"));
  EXPECT_EQ(d.capacity.at("memory"), int64_t{40960} * 1024 * 1024);
  EXPECT_TRUE(pool.shared_counters.empty());
  EXPECT_TRUE(d.consumes_counters.empty());
}

TEST(DevicesTest, UnreadableGpusAreNotOffered) {
  GpuInfo broken = TestGpu(1);
  broken.error = "GPU is lost";
  DevicePool pool = BuildDevicePool({TestGpu(0), broken}, "n");
  ASSERT_EQ(pool.devices.size(), 1u);
  EXPECT_EQ(pool.devices[0].name, "gpu-0");
}

TEST(DevicesTest, MigInstancesArePartitionsOfSharedCounters) {
  DevicePool pool = BuildDevicePool({TestMigGpu(0)}, "n");
  ASSERT_EQ(pool.devices.size(), 4u);
  ASSERT_EQ(pool.shared_counters.size(), 1u);
  EXPECT_EQ(pool.shared_counters[0].name, "gpu-0-counter-set");
  EXPECT_EQ(pool.shared_counters[0].counters.count("memory-slice-7"), 1u);
  // The full GPU consumes every slice.
  EXPECT_EQ(pool.devices[0].consumes_counters[0].counters.size(), 9u);
  const Device& c = pool.devices[3];
  EXPECT_EQ(c.name, "gpu-0-mig-3g20gb-9-4");
  EXPECT_EQ(c.attributes.at("type"), AttributeValue::String("mig"));
  EXPECT_EQ(c.attributes.at("profile"), AttributeValue::String("3g.20gb"));
  EXPECT_EQ(c.attributes.at("parentUUID"), AttributeValue::String("GPU-00000000"));
  EXPECT_EQ(c.attributes.count("index"), 0u);
  std::vector<std::string> slices;
  for (const auto& [name, amount] : c.consumes_counters[0].counters) slices.push_back(name);
  EXPECT_THAT(slices, ::testing::ElementsAre("memory", "memory-slice-4", "memory-slice-5",
                                             "memory-slice-6", "memory-slice-7"));
}

TEST(DevicesTest, ResourceSliceJsonHasTheV1Shape) {
  nlohmann::ordered_json slice = ResourceSliceJson(BuildDevicePool({TestMigGpu(0)}, "node-a"));
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["kind"], "ResourceSlice");
  const auto& spec = slice["spec"];
  EXPECT_EQ(spec["driver"], "gpu.canhazgpu.dev");
  EXPECT_EQ(spec["nodeName"], "node-a");
  EXPECT_EQ(spec["pool"]["name"], "node-a");
  EXPECT_EQ(spec["devices"][0]["attributes"]["productName"]["string"], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(spec["devices"][0]["attributes"]["cudaComputeCapability"]["version"], "8.0.0");
  EXPECT_EQ(spec["devices"][0]["attributes"]["index"]["int"], 0);
  EXPECT_EQ(spec["devices"][0]["capacity"]["memory"]["value"], "40Gi");
  EXPECT_EQ(spec["sharedCounters"][0]["counters"]["memory-slice-0"]["value"], "1");
  EXPECT_EQ(spec["devices"][1]["consumesCounters"][0]["counterSet"], "gpu-0-counter-set");
}

TEST(DevicesTest, FormatQuantityUsesTheLargestExactBinarySuffix) {
  EXPECT_EQ(FormatQuantity(int64_t{80} << 30), "80Gi");
  EXPECT_EQ(FormatQuantity(int64_t{81559} << 20), "81559Mi");
  EXPECT_EQ(FormatQuantity(1000), "1000");
  EXPECT_EQ(FormatQuantity(0), "0");
}

TEST(DevicesTest, SelectorsSeeTheDeviceAsKubernetesBuildsIt) {
  DevicePool pool = BuildDevicePool({TestGpu(0)}, "n");
  cel::Value device = CelDevice(pool.devices[0], kDriverName);
  cel::Env env = cel::Env::DraSelector();
  auto eval = [&](const std::string& expr) {
    auto p = env.Compile(expr);
    EXPECT_TRUE(p.ok()) << p.status();
    return p->Evaluate(&device);
  };
  EXPECT_TRUE(eval("device.capacity['gpu.canhazgpu.dev'].memory.compareTo(quantity('40Gi')) >= 0")
                  .is_bool(true));
  EXPECT_TRUE(eval("device.attributes['gpu.canhazgpu.dev'].cudaComputeCapability.isGreaterThan("
                   "semver('7.5.0'))")
                  .is_bool(true));
  EXPECT_TRUE(
      eval("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:0'").is_bool(true));
}

TEST(DevicesTest, FindAttributeAcceptsTheDriverDomainQualifiedName) {
  DevicePool pool = BuildDevicePool({TestGpu(0)}, "n");
  EXPECT_NE(FindAttribute(pool.devices[0], kDriverName, "gpu.canhazgpu.dev/productName"), nullptr);
  EXPECT_NE(FindAttribute(pool.devices[0], kDriverName, kPcieRootAttribute), nullptr);
  EXPECT_EQ(FindAttribute(pool.devices[0], kDriverName, "other.dev/productName"), nullptr);
}

}  // namespace
}  // namespace canhazgpu::dra
