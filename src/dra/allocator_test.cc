#include "dra/allocator.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::dra {
namespace {

using ::testing::HasSubstr;
using testing::kGpuClassSelector;
using testing::kMigClassSelector;
using testing::TestGpu;
using testing::TestMigGpu;

std::vector<DeviceClass> Classes() {
  return {{"gpu", {kGpuClassSelector}}, {"mig", {kMigClassSelector}}};
}

DeviceRequest Exactly(std::string name, std::string cls, int64_t count = 1,
                      std::vector<std::string> selectors = {}) {
  RequestSpec spec{
      .device_class = std::move(cls), .selectors = std::move(selectors), .count = count};
  return {std::move(name), {spec}, false};
}

std::unique_ptr<Allocator> Make(std::vector<GpuInfo> gpus) {
  auto a = Allocator::Create(Classes(), {BuildDevicePool(gpus, "node-a")});
  EXPECT_TRUE(a.ok()) << a.status();
  return *std::move(a);
}

std::vector<std::string> Names(const Allocation& a) {
  std::vector<std::string> out;
  for (const AllocatedDevice& d : a.devices) out.push_back(d.device);
  return out;
}

TEST(AllocatorTest, FirstFreeMatchingDeviceInOrderThenExhausted) {
  auto a = Make({TestGpu(0), TestGpu(1)});
  Claim claim{"alice", {Exactly("gpu", "gpu")}, {}};
  auto first = a->Allocate(claim);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(Names(*first), ::testing::ElementsAre("gpu-0"));
  EXPECT_EQ(first->devices[0].request, "gpu");
  EXPECT_EQ(first->devices[0].driver, "gpu.canhazgpu.dev");
  claim.name = "bob";
  EXPECT_THAT(Names(*a->Allocate(claim)), ::testing::ElementsAre("gpu-1"));
  claim.name = "carol";
  Explanation why;
  auto third = a->Allocate(claim, &why);
  EXPECT_TRUE(absl::IsResourceExhausted(third.status())) << third.status();
  ASSERT_EQ(why.requests.size(), 1u);
  EXPECT_EQ(why.requests[0].matching, 2);
  EXPECT_EQ(why.requests[0].available, 0);
  EXPECT_THAT(why.requests[0].taken,
              ::testing::ElementsAre(std::pair<std::string, std::string>("gpu-0", "alice"),
                                     std::pair<std::string, std::string>("gpu-1", "bob")));
  EXPECT_THAT(why.Text(), HasSubstr("gpu-0 is taken by alice"));
  EXPECT_EQ(why.Json()["requests"][0]["taken"][1]["holder"], "bob");
}

TEST(AllocatorTest, UnsatisfiableRequestFailsAtOnceWithSelectorCounts) {
  auto a = Make({TestGpu(0), TestGpu(1, "NVIDIA H100 80GB HBM3", 81559)});
  Claim claim{
      "alice",
      {Exactly("big", "gpu", 1,
               {"device.capacity['gpu.canhazgpu.dev'].memory.compareTo(quantity('100Gi')) >= 0"})},
      {}};
  Explanation why;
  auto r = a->Allocate(claim, &why);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_TRUE(why.never);
  ASSERT_EQ(why.requests[0].selectors.size(), 2u);
  EXPECT_EQ(why.requests[0].selectors[0].rejected, 0);  // the class selector
  EXPECT_EQ(why.requests[0].selectors[1].rejected, 2);
  EXPECT_THAT(why.Text(), HasSubstr("request selector rejected 2"));
}

TEST(AllocatorTest, CelRuntimeErrorAbortsWithTheHasHint) {
  auto a = Make({TestGpu(0)});
  Claim claim{
      "alice",
      {Exactly("g", "gpu", 1, {"device.attributes['gpu.canhazgpu.dev'].profile == '1g.5gb'"})},
      {}};
  Explanation why;
  auto r = a->Allocate(claim, &why);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_THAT(why.error, HasSubstr("no such key: profile"));
  EXPECT_THAT(why.error, HasSubstr("guarding the check with has()"));
}

TEST(AllocatorTest, BadInputIsInvalidArgument) {
  auto a = Make({TestGpu(0)});
  EXPECT_TRUE(absl::IsInvalidArgument(a->Allocate({"x", {Exactly("g", "nope")}, {}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      a->Allocate({"x", {Exactly("g", "gpu", 1, {"device.nope"})}, {}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Allocate({"x", {Exactly("g", "gpu", 0)}, {}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(a->Allocate({"x", {}, {}}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      a->Allocate(
           {"x", {Exactly("g", "gpu")}, {{.match_attribute = "a/b", .distinct_attribute = "c/d"}}})
          .status()));
  EXPECT_FALSE(Allocator::Create({{"bad", {"1 +"}}}, {}).ok());
}

TEST(AllocatorTest, MatchAttributeBacktracksAcrossRequests) {
  // Roots: gpu-0, gpu-1 on pci0000:0; gpu-2, gpu-3 on pci0000:1. gpu-1 is
  // taken, so two GPUs on one root exist only on pci0000:1.
  auto a = Make({TestGpu(0), TestGpu(1), TestGpu(2), TestGpu(3)});
  ASSERT_TRUE(a->MarkAllocated("node-a", "gpu-1", "bob").ok());
  Claim claim{"alice",
              {Exactly("a", "gpu"), Exactly("b", "gpu")},
              {{.requests = {}, .match_attribute = kPcieRootAttribute}}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Names(*r), ::testing::ElementsAre("gpu-2", "gpu-3"));
}

TEST(AllocatorTest, UnmetConstraintIsExplained) {
  auto a = Make({TestGpu(0), TestGpu(2)});  // one GPU per root
  Claim claim{"alice", {Exactly("a", "gpu", 2)}, {{.match_attribute = kPcieRootAttribute}}};
  Explanation why;
  EXPECT_FALSE(a->Allocate(claim, &why).ok());
  EXPECT_THAT(why.unmet_constraints,
              ::testing::ElementsAre("matchAttribute resource.kubernetes.io/pcieRoot"));
}

TEST(AllocatorTest, DistinctAttribute) {
  auto a = Make({TestGpu(0), TestGpu(1), TestGpu(2)});
  Claim claim{"alice", {Exactly("a", "gpu", 2)}, {{.distinct_attribute = kPcieRootAttribute}}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Names(*r), ::testing::ElementsAre("gpu-0", "gpu-2"));
}

TEST(AllocatorTest, FirstAvailableTakesTheFirstSubRequestThatFits) {
  auto a = Make({TestGpu(0)});
  DeviceRequest request{
      "gpu",
      {{.name = "h100",
        .device_class = "gpu",
        .selectors = {"device.attributes['gpu.canhazgpu.dev'].productName.contains('H100')"}},
       {.name = "any", .device_class = "gpu"}},
      true};
  auto r = a->Allocate({"alice", {request}, {}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].request, "gpu/any");
}

TEST(AllocatorTest, AllModeTakesEveryMatchingDeviceOrNothing) {
  auto a = Make({TestGpu(0), TestGpu(1)});
  Claim all{"alice", {{"all", {{.device_class = "gpu", .all = true}}, false}}, {}};
  auto r = a->Allocate(all);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices.size(), 2u);
  auto b = Make({TestGpu(0), TestGpu(1)});
  ASSERT_TRUE(b->MarkAllocated("node-a", "gpu-1", "bob").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(b->Allocate(all).status()));
}

TEST(AllocatorTest, FullGpuAndItsMigInstancesExcludeEachOther) {
  auto a = Make({TestMigGpu(0)});
  auto mig = a->Allocate({"alice", {Exactly("m", "mig")}, {}});
  ASSERT_TRUE(mig.ok()) << mig.status();
  EXPECT_EQ(mig->devices[0].device, "gpu-0-mig-1g5gb-19-0");
  Explanation why;
  EXPECT_TRUE(
      absl::IsResourceExhausted(a->Allocate({"bob", {Exactly("g", "gpu")}, {}}, &why).status()));
  EXPECT_THAT(why.requests[0].counter_blocked, ::testing::ElementsAre("gpu-0"));
  // The other instances are still there.
  auto more = a->Allocate({"bob", {Exactly("m", "mig", 2)}, {}});
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_THAT(Names(*more), ::testing::ElementsAre("gpu-0-mig-1g5gb-19-1", "gpu-0-mig-3g20gb-9-4"));

  auto b = Make({TestMigGpu(0)});
  ASSERT_TRUE(b->Allocate({"carol", {Exactly("g", "gpu")}, {}}).ok());
  EXPECT_FALSE(b->Allocate({"dave", {Exactly("m", "mig")}, {}}).ok());
}

TEST(AllocatorTest, TwoMigSlicesOfTheSamePhysicalGpu) {
  auto a = Make({TestMigGpu(0), TestMigGpu(1)});
  ASSERT_TRUE(a->MarkAllocated("node-a", "gpu-0-mig-3g20gb-9-4", "bob").ok());
  auto profile = [](const char* p) {
    return std::vector<std::string>{
        StrCat("device.attributes['gpu.canhazgpu.dev'].profile == '", p, "'")};
  };
  Claim claim{"alice",
              {Exactly("small", "mig", 1, profile("1g.5gb")),
               Exactly("large", "mig", 1, profile("3g.20gb"))},
              {{.match_attribute = "gpu.canhazgpu.dev/parentUUID"}}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Names(*r), ::testing::ElementsAre("gpu-1-mig-1g5gb-19-0", "gpu-1-mig-3g20gb-9-4"));
}

TEST(AllocatorTest, AdminAccessMayUseDevicesInUse) {
  auto a = Make({TestGpu(0)});
  ASSERT_TRUE(a->Allocate({"alice", {Exactly("g", "gpu")}, {}}).ok());
  Claim admin{"ops", {{"g", {{.device_class = "gpu", .admin_access = true}}, false}}, {}};
  auto r = a->Allocate(admin);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->devices[0].admin_access);
  EXPECT_FALSE(a->Allocate({"bob", {Exactly("g", "gpu")}, {}}).ok());
}

TEST(AllocatorTest, TriesNodesInOrder) {
  auto a = Allocator::Create(Classes(), testing::TestNodes(3, 2));
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 6; ++i) {
    auto r = (*a)->Allocate({StrCat("c", i), {Exactly("g", "gpu")}, {}});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->node, StrCat("node-", i / 2));
  }
  EXPECT_TRUE(absl::IsResourceExhausted((*a)->Allocate({"x", {Exactly("g", "gpu")}, {}}).status()));
}

TEST(AllocatorTest, StepLimitStopsPathologicalSearches) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 24; ++i) gpus.push_back(TestGpu(i));
  auto a = Make(gpus);
  a->set_step_limit(1000);
  // 12 distinct roots among 24 GPUs, but 13 wanted: no solution, huge search.
  Claim claim{"x", {Exactly("g", "gpu", 13)}, {{.distinct_attribute = kPcieRootAttribute}}};
  Explanation why;
  EXPECT_FALSE(a->Allocate(claim, &why).ok());
  EXPECT_TRUE(why.search_limit);
}

TEST(AllocatorTest, TaintedDevicesOnlyForRequestsThatTolerateThem) {
  DevicePool pool = BuildDevicePool({TestGpu(0), TestGpu(1)}, "node-a");
  pool.devices[0].taints = {{"gpu.canhazgpu.dev/xid", "79", "NoSchedule"}};
  pool.devices[1].taints = {{"gpu.canhazgpu.dev/note", "", "None"}};  // informs only
  auto a = *Allocator::Create(Classes(), {pool});
  Claim claim{"alice", {Exactly("gpu", "gpu", 2)}, {}};
  Explanation why;
  auto r = a->Allocate(claim, &why);
  // Not "never": the taint may be removed.
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_FALSE(why.never);
  ASSERT_EQ(why.requests.size(), 1u);
  EXPECT_THAT(why.requests[0].tainted, ::testing::ElementsAre(std::pair<std::string, std::string>(
                                           "gpu-0", "gpu.canhazgpu.dev/xid=79:NoSchedule")));
  EXPECT_THAT(why.Text(), HasSubstr("gpu-0 has the taint gpu.canhazgpu.dev/xid=79:NoSchedule"));

  // A toleration of another key or effect does not help; Exists on the key does.
  claim.requests[0].alternatives[0].tolerations = {{"gpu.canhazgpu.dev/xid", "Equal", "13", ""}};
  EXPECT_FALSE(a->Allocate(claim).ok());
  claim.requests[0].alternatives[0].tolerations = {
      {"gpu.canhazgpu.dev/xid", "Exists", "", "NoExecute"}};
  EXPECT_FALSE(a->Allocate(claim).ok());
  claim.requests[0].alternatives[0].tolerations = {{"gpu.canhazgpu.dev/xid", "Exists", "", ""}};
  auto tolerated = a->Allocate(claim);
  ASSERT_TRUE(tolerated.ok()) << tolerated.status();
  EXPECT_THAT(Names(*tolerated), ::testing::ElementsAre("gpu-0", "gpu-1"));
}

TEST(AllocatorTest, EmptyKeyWithExistsToleratesEveryTaint) {
  DeviceToleration all{"", "Exists", "", ""};
  EXPECT_TRUE(all.Tolerates({"a", "b", "NoExecute"}));
  DeviceToleration equal_empty_key{"", "Equal", "", ""};
  EXPECT_FALSE(equal_empty_key.Tolerates({"a", "", "NoSchedule"}));
  DeviceToleration equal{"a", "Equal", "b", "NoSchedule"};
  EXPECT_TRUE(equal.Tolerates({"a", "b", "NoSchedule"}));
  EXPECT_FALSE(equal.Tolerates({"a", "c", "NoSchedule"}));
}

}  // namespace
}  // namespace canhazgpu::dra
