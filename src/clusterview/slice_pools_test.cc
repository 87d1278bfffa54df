#include "clusterview/slice_pools.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::clusterview {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

kube::ResourceSlice Slice(const nlohmann::json& json) {
  auto slice = kube::ResourceSlice::FromJson(json);
  EXPECT_TRUE(slice.ok()) << slice.status();
  return *slice;
}

nlohmann::json DriverSlice(const dra::DevicePool& pool, int64_t generation = 1, int64_t count = 1) {
  nlohmann::json j = dra::ResourceSliceJson(pool);
  j["spec"]["pool"]["generation"] = generation;
  j["spec"]["pool"]["resourceSliceCount"] = count;
  return j;
}

TEST(SlicePoolsTest, DriverSliceRoundTripsIntoTheSamePool) {
  dra::DevicePool pool =
      dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestMigGpu(1)}, "node-a");
  SlicePools out = PoolsFromSlices({Slice(DriverSlice(pool))});
  EXPECT_THAT(out.problems, IsEmpty());
  ASSERT_EQ(out.pools.size(), 1u);
  const NodePool& got = out.pools[0];
  EXPECT_EQ(got.node, "node-a");
  EXPECT_EQ(got.pool.driver, "gpu.canhazgpu.dev");
  EXPECT_EQ(got.pool.pool, "node-a");
  ASSERT_EQ(got.pool.devices.size(), pool.devices.size());
  for (size_t i = 0; i < pool.devices.size(); ++i) {
    EXPECT_EQ(got.pool.devices[i].name, pool.devices[i].name);
    EXPECT_EQ(got.pool.devices[i].attributes, pool.devices[i].attributes);
    EXPECT_EQ(got.pool.devices[i].capacity, pool.devices[i].capacity);
    ASSERT_EQ(got.pool.devices[i].consumes_counters.size(),
              pool.devices[i].consumes_counters.size());
    for (size_t c = 0; c < pool.devices[i].consumes_counters.size(); ++c) {
      EXPECT_EQ(got.pool.devices[i].consumes_counters[c].counters,
                pool.devices[i].consumes_counters[c].counters);
    }
  }
  ASSERT_EQ(got.pool.shared_counters.size(), pool.shared_counters.size());
  EXPECT_EQ(got.pool.shared_counters[0].counters, pool.shared_counters[0].counters);
}

TEST(SlicePoolsTest, OnlyTheHighestGenerationAndOnlyComplete) {
  dra::DevicePool two =
      dra::BuildDevicePool({dra::testing::TestGpu(0), dra::testing::TestGpu(1)}, "node-a");
  dra::DevicePool one = dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-a");
  nlohmann::json old_slice = DriverSlice(two, 1);
  nlohmann::json new_slice = DriverSlice(one, 2);
  new_slice["metadata"]["name"] = "node-a-new";
  SlicePools out = PoolsFromSlices({Slice(old_slice), Slice(new_slice)});
  ASSERT_EQ(out.pools.size(), 1u);
  EXPECT_EQ(out.pools[0].pool.devices.size(), 1u);

  // Generation 3 says two slices; only one arrived: the pool waits.
  nlohmann::json partial = DriverSlice(two, 3, 2);
  partial["metadata"]["name"] = "node-a-3a";
  out = PoolsFromSlices({Slice(old_slice), Slice(new_slice), Slice(partial)});
  EXPECT_THAT(out.pools, IsEmpty());
  EXPECT_THAT(out.problems,
              ElementsAre("pool gpu.canhazgpu.dev/node-a: incomplete, 1 of 2 slices at "
                          "generation 3; its devices are not used until the rest arrive"));
}

TEST(SlicePoolsTest, CountersInASliceOfTheirOwnAreFound) {
  dra::DevicePool pool = dra::BuildDevicePool({dra::testing::TestMigGpu(0)}, "node-a");
  nlohmann::json devices = DriverSlice(pool, 1, 2);
  nlohmann::json counters = devices;
  devices["spec"].erase("sharedCounters");
  counters["spec"].erase("devices");
  counters["spec"].erase("nodeName");
  counters["metadata"]["name"] = "node-a-counters";
  SlicePools out = PoolsFromSlices({Slice(devices), Slice(counters)});
  EXPECT_THAT(out.problems, IsEmpty());
  ASSERT_EQ(out.pools.size(), 1u);
  EXPECT_EQ(out.pools[0].node, "node-a");
  EXPECT_EQ(out.pools[0].pool.shared_counters.size(), 1u);
}

TEST(SlicePoolsTest, TaintsAreRead) {
  dra::DevicePool pool = dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-a");
  nlohmann::json j = DriverSlice(pool);
  j["spec"]["devices"][0]["taints"] = {
      {{"key", "gpu.canhazgpu.dev/xid"}, {"value", "79"}, {"effect", "NoSchedule"}}};
  SlicePools out = PoolsFromSlices({Slice(j)});
  ASSERT_EQ(out.pools.size(), 1u);
  EXPECT_THAT(out.pools[0].pool.devices[0].taints,
              ElementsAre(dra::DeviceTaint{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}));
}

// Malformed input leaves that pool out with one line naming what is wrong;
// other pools are still used.
TEST(SlicePoolsTest, SharedGpusKeepTheirPolicyAndMultipleAllocations) {
  dra::DevicePool pool = dra::BuildDevicePool(
      {dra::testing::TestGpu(0), dra::testing::TestMigGpu(1)}, "node-a", {.sharing = true});
  pool.devices[0].request_policies["memory"].default_value.reset();  // optional
  dra::Device with_values = pool.devices[0];
  with_values.name = "gpu-9";
  with_values.request_policies["memory"] = {std::nullopt, {1 << 20, 2 << 20}, {}, {}, {}};
  pool.devices.push_back(with_values);
  SlicePools out = PoolsFromSlices({Slice(DriverSlice(pool))});
  EXPECT_THAT(out.problems, IsEmpty());
  ASSERT_EQ(out.pools.size(), 1u);
  const std::vector<dra::Device>& got = out.pools[0].pool.devices;
  ASSERT_EQ(got.size(), pool.devices.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].allow_multiple_allocations, pool.devices[i].allow_multiple_allocations);
    EXPECT_EQ(got[i].request_policies, pool.devices[i].request_policies) << got[i].name;
    EXPECT_EQ(got[i].capacity, pool.devices[i].capacity);
  }
  EXPECT_TRUE(got[0].allow_multiple_allocations);
  EXPECT_FALSE(got[1].allow_multiple_allocations);  // in MIG mode
}

TEST(SlicePoolsTest, MalformedSlicesLeaveTheirPoolOutWithOneLine) {
  dra::DevicePool good = dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-b");
  struct Case {
    std::function<void(nlohmann::json&)> mutate;
    std::string problem;
  };
  std::vector<Case> cases = {
      {[](nlohmann::json& j) {
         j["spec"]["devices"][0]["attributes"]["index"] = nlohmann::json::object();
       },
       "pool gpu.canhazgpu.dev/node-a: slice node-a-gpu.canhazgpu.dev: device gpu-0: attribute "
       "index: needs exactly one of int, bool, string, version"},
      {[](nlohmann::json& j) { j["spec"]["devices"][0]["capacity"]["memory"]["value"] = "lots"; },
       "device gpu-0: capacity memory: "},
      {[](nlohmann::json& j) {
         j["spec"]["devices"][0]["taints"] = {{{"key", "k"}, {"effect", "Sometimes"}}};
       },
       "device gpu-0: taint k: unknown effect 'Sometimes'"},
      {[](nlohmann::json& j) { j["spec"]["devices"][1] = j["spec"]["devices"][0]; },
       "device gpu-0 appears twice in the pool"},
      {[](nlohmann::json& j) {
         j["spec"]["devices"][0]["consumesCounters"] = {
             {{"counterSet", "nope"}, {"counters", {{"memory", {{"value", "1"}}}}}}};
       },
       "device gpu-0 consumes counter nope/memory that no slice of the pool shares"},
      {[](nlohmann::json& j) {
         j["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {
             {"validRange", {{"min", "1Mi"}, {"step", "tiny"}}}};
       },
       "device gpu-0: capacity memory: requestPolicy.validRange.step: "},
      {[](nlohmann::json& j) {
         j["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {
             {"validRange", {{"max", "1Gi"}}}};
       },
       "device gpu-0: capacity memory: requestPolicy.validRange.min: required"},
      {[](nlohmann::json& j) { j["spec"].erase("nodeName"); },
       "names no node and is not for allNodes"},
  };
  for (const Case& c : cases) {
    nlohmann::json bad = DriverSlice(dra::BuildDevicePool({dra::testing::TestGpu(0)}, "node-a"));
    c.mutate(bad);
    SlicePools out = PoolsFromSlices({Slice(bad), Slice(DriverSlice(good))});
    ASSERT_EQ(out.pools.size(), 1u) << c.problem;
    EXPECT_EQ(out.pools[0].pool.pool, "node-b");
    ASSERT_EQ(out.problems.size(), 1u) << c.problem;
    EXPECT_THAT(out.problems[0], HasSubstr(c.problem));
    EXPECT_EQ(out.problems[0].find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace canhazgpu::clusterview
