#include "driver/slices.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/resource_rules.h"

namespace canhazgpu::driver {
namespace {

using dra::testing::TestGpu;
using dra::testing::TestMigGpu;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

NodeDevices Node(std::vector<GpuInfo> gpus, const std::string& name = "node-a") {
  return {.pool = dra::BuildDevicePool(gpus, name)};
}

std::vector<GpuInfo> Gpus(int n) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(TestGpu(i));
  return gpus;
}

std::vector<std::string> DeviceNames(const json& slice) {
  std::vector<std::string> names;
  for (const json& d : slice["spec"].value("devices", json::array())) names.push_back(d["name"]);
  return names;
}

void ExpectValid(const BuiltSlices& built) {
  for (const json& slice : built.slices) {
    EXPECT_THAT(kube::CheckResourceSliceSpec(slice["spec"]), ::testing::IsEmpty()) << slice.dump();
  }
}

TEST(SlicesTest, EightGpusAreOneSliceOfTheNodesPool) {
  NodeDevices node = Node(Gpus(8));
  node.node_uid = "uid-1";
  BuiltSlices built = BuildSlices(node, 3);
  ASSERT_EQ(built.slices.size(), 1u);
  const json& s = built.slices[0];
  EXPECT_EQ(s["metadata"]["name"], "node-a-gpu.canhazgpu.dev-0");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(s["spec"]["driver"], "gpu.canhazgpu.dev");
  EXPECT_EQ(s["spec"]["nodeName"], "node-a");
  EXPECT_EQ(s["spec"]["pool"],
            (json{{"name", "node-a"}, {"generation", 3}, {"resourceSliceCount", 1}}));
  EXPECT_THAT(DeviceNames(s),
              ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"));
  EXPECT_EQ(s["spec"]["devices"][2]["attributes"]["index"]["int"], 2);
  EXPECT_EQ(s["spec"]["devices"][2]["capacity"]["memory"]["value"], "40Gi");
  EXPECT_TRUE(built.dropped.empty());
  ExpectValid(built);
}

TEST(SlicesTest, ManyDevicesAreCutAt128AndTaintedOnesAt64) {
  BuiltSlices plain = BuildSlices(Node(Gpus(200)), 1);
  ASSERT_EQ(plain.slices.size(), 2u);
  EXPECT_EQ(plain.slices[0]["spec"]["devices"].size(), 128u);
  EXPECT_EQ(plain.slices[1]["spec"]["devices"].size(), 72u);
  EXPECT_EQ(plain.slices[1]["metadata"]["name"], "node-a-gpu.canhazgpu.dev-1");
  EXPECT_EQ(plain.slices[1]["spec"]["pool"]["resourceSliceCount"], 2);
  ExpectValid(plain);

  NodeDevices tainted = Node(Gpus(100));
  tainted.taints["gpu-99"] = {
      {.key = "gpu.canhazgpu.dev/xid", .value = "79", .effect = "NoExecute"}};
  BuiltSlices cut = BuildSlices(tainted, 1);
  ASSERT_EQ(cut.slices.size(), 2u);
  EXPECT_EQ(cut.slices[0]["spec"]["devices"].size(), 99u);  // plain: up to 128
  EXPECT_EQ(cut.slices[1]["spec"]["devices"][0]["taints"][0],
            (json{{"key", "gpu.canhazgpu.dev/xid"}, {"value", "79"}, {"effect", "NoExecute"}}));
}

TEST(SlicesTest, AdvancedDevicesAreCutAt64) {
  NodeDevices node = Node(Gpus(70));
  for (int i = 0; i < 70; ++i)
    node.taints["gpu-" + std::to_string(i)] = {{.key = "k", .effect = "NoSchedule"}};
  BuiltSlices built = BuildSlices(node, 1);
  ASSERT_EQ(built.slices.size(), 2u);
  EXPECT_EQ(built.slices[0]["spec"]["devices"].size(), 64u);
  EXPECT_EQ(built.slices[1]["spec"]["devices"].size(), 6u);
}

TEST(SlicesTest, MigCountersGoInASliceOfTheirOwn) {
  BuiltSlices built = BuildSlices(Node({TestMigGpu(0), TestGpu(1)}), 1);
  ASSERT_EQ(built.slices.size(), 2u);
  EXPECT_FALSE(built.slices[0]["spec"].contains("devices"));
  EXPECT_EQ(built.slices[0]["spec"]["sharedCounters"][0]["name"], "gpu-0-counter-set");
  EXPECT_THAT(DeviceNames(built.slices[1]),
              ElementsAre("gpu-0", "gpu-0-mig-1g5gb-19-0", "gpu-0-mig-1g5gb-19-1",
                          "gpu-0-mig-3g20gb-9-4", "gpu-1"));
  EXPECT_EQ(built.slices[1]["spec"]["devices"][1]["consumesCounters"][0]["counterSet"],
            "gpu-0-counter-set");
  ExpectValid(built);
}

TEST(SlicesTest, WithheldDevicesAreLeftOutAndAnEmptyPoolStillHasASlice) {
  NodeDevices node = Node(Gpus(4));
  node.withheld = {"gpu-1", "gpu-3"};
  EXPECT_THAT(DeviceNames(BuildSlices(node, 1).slices[0]), ElementsAre("gpu-0", "gpu-2"));
  node.withheld = {"gpu-0", "gpu-1", "gpu-2", "gpu-3"};
  BuiltSlices empty = BuildSlices(node, 1);
  ASSERT_EQ(empty.slices.size(), 1u);
  EXPECT_TRUE(empty.slices[0]["spec"]["devices"].empty());
  ExpectValid(empty);
}

TEST(SlicesTest, AnAttributeTheServerWouldRejectIsDroppedNotTheSlice) {
  NodeDevices node = Node(Gpus(2));
  // A value past 64 bytes and a name that is no C identifier, as a future
  // provider might produce.
  node.pool.devices[0].attributes["productName"] =
      dra::AttributeValue::String(std::string(80, 'X'));
  node.pool.devices[0].capacity["bad name"] = 1;
  BuiltSlices built = BuildSlices(node, 1);
  ASSERT_EQ(built.slices.size(), 1u);
  EXPECT_FALSE(built.slices[0]["spec"]["devices"][0]["attributes"].contains("productName"));
  EXPECT_TRUE(built.slices[0]["spec"]["devices"][1]["attributes"].contains("productName"));
  EXPECT_FALSE(built.slices[0]["spec"]["devices"][0]["capacity"].contains("bad name"));
  EXPECT_TRUE(built.slices[0]["spec"]["devices"][0]["capacity"].contains("memory"));
  ASSERT_EQ(built.dropped.size(), 2u);
  EXPECT_THAT(built.dropped[0], HasSubstr("gpu-0: attribute productName: Too long"));
  EXPECT_THAT(built.dropped[1], HasSubstr("gpu-0: capacity bad name: Invalid value"));
  ExpectValid(built);
}

TEST(SlicesTest, LongNodeNamesStillMakeValidObjectNames) {
  const std::string node(250, 'n');
  EXPECT_EQ(SliceName(node, "gpu.canhazgpu.dev", 7).size(), 253u);
  EXPECT_THAT(SliceName(node, "gpu.canhazgpu.dev", 7), ::testing::EndsWith("-gpu.canhazgpu.dev-7"));
}

}  // namespace
}  // namespace canhazgpu::driver
