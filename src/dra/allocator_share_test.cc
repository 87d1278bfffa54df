// Consumable capacity (KEP-5075): shares of multi-allocatable devices.
#include "dra/allocator.h"
#include "dra/capacity.h"
#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kGpuClassSelector;
using testing::TestGpu;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

// `n` 40Gi GPUs published for sharing: memory default = whole, 1Mi steps.
DevicePool SharedNode(int n, std::string node = "node-a") {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(TestGpu(i));
  DevicePool pool = BuildDevicePool(gpus, node);
  for (Device& d : pool.devices) {
    d.allow_multiple_allocations = true;
    const int64_t v = d.capacity["memory"];
    d.request_policies["memory"] = {v, {}, kMi, v, kMi};
  }
  return pool;
}

std::unique_ptr<Allocator> MakeShared(std::vector<DevicePool> pools) {
  auto a = Allocator::Create({{"gpu", {kGpuClassSelector}}}, std::move(pools));
  EXPECT_TRUE(a.ok()) << a.status();
  return *std::move(a);
}

DeviceRequest Share(std::string name, int64_t bytes, int64_t count = 1,
                    std::vector<std::string> selectors = {}) {
  RequestSpec spec{.device_class = "gpu", .selectors = std::move(selectors), .count = count};
  if (bytes > 0) spec.capacity_requests["memory"] = bytes;
  return {std::move(name), {spec}, false};
}

Claim OneShare(std::string holder, int64_t bytes) {
  return {std::move(holder), {Share("gpu", bytes)}, {}};
}

TEST(ConsumedAmountTest, NoPolicyTakesTheRequestOrTheWholeValue) {
  EXPECT_EQ(ConsumedAmount(std::nullopt, 100, nullptr), 100);
  EXPECT_EQ(ConsumedAmount(7, 100, nullptr), 7);
  EXPECT_EQ(ConsumedAmount(0, 100, nullptr), 0);
}

TEST(ConsumedAmountTest, RangeRoundsUpToMinPlusSteps) {
  CapacityRequestPolicy p{std::nullopt, {}, 10, 50, 4};
  EXPECT_EQ(ConsumedAmount(1, 100, &p), 10);   // below min: min
  EXPECT_EQ(ConsumedAmount(10, 100, &p), 10);  // exactly min
  EXPECT_EQ(ConsumedAmount(11, 100, &p), 14);  // min + 1 step
  EXPECT_EQ(ConsumedAmount(14, 100, &p), 14);
  EXPECT_EQ(ConsumedAmount(15, 100, &p), 18);
  EXPECT_EQ(ConsumedAmount(50, 100, &p), 50);            // max (a multiple of step from min)
  EXPECT_EQ(ConsumedAmount(51, 100, &p), std::nullopt);  // rounds to 54 > max
  // No default: the whole value, which is above max, so ineligible (as the
  // scheduler's violatesPolicy decides).
  EXPECT_EQ(ConsumedAmount(std::nullopt, 100, &p), std::nullopt);
  p.range_max.reset();
  EXPECT_EQ(ConsumedAmount(99, 100, &p), 102);  // no max: rounding may pass the value
}

TEST(ConsumedAmountTest, RangeWithoutStepKeepsTheRequest) {
  CapacityRequestPolicy p{std::nullopt, {}, 10, std::nullopt, std::nullopt};
  EXPECT_EQ(ConsumedAmount(33, 100, &p), 33);
  EXPECT_EQ(ConsumedAmount(3, 100, &p), 10);
}

TEST(ConsumedAmountTest, DefaultWhenTheRequestNamesNoCapacityAndAlwaysValid) {
  CapacityRequestPolicy p{100, {}, 1, 100, 1};
  EXPECT_EQ(ConsumedAmount(std::nullopt, 100, &p), 100);
  CapacityRequestPolicy values{8, {4, 8, 16}, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(ConsumedAmount(std::nullopt, 100, &values), 8);
}

TEST(ConsumedAmountTest, ValidValuesRoundUpAndRejectAboveTheLargest) {
  CapacityRequestPolicy p{std::nullopt, {4, 8, 16}, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(ConsumedAmount(1, 100, &p), 4);
  EXPECT_EQ(ConsumedAmount(4, 100, &p), 4);
  EXPECT_EQ(ConsumedAmount(5, 100, &p), 8);
  EXPECT_EQ(ConsumedAmount(16, 100, &p), 16);
  EXPECT_EQ(ConsumedAmount(17, 100, &p), std::nullopt);
}

TEST(CapacityDemandTest, FiltersLikeCompareToAndNamesTheReason) {
  Device d = SharedNode(1).devices[0];
  std::vector<int64_t> need;
  std::string why;
  EXPECT_FALSE(CapacityDemand(d, {{"memory", 41 * kGi}}, &need, &why));
  EXPECT_EQ(why, "memory 41Gi is more than its 40Gi");
  EXPECT_FALSE(CapacityDemand(d, {{"cores", 1}}, &need, &why));
  EXPECT_EQ(why, "it has no capacity cores");
  ASSERT_TRUE(CapacityDemand(d, {{"memory", 10 * kGi + 1}}, &need, &why));
  EXPECT_THAT(need, ElementsAre(10 * kGi + kMi));  // rounded up to the next MiB
  d.allow_multiple_allocations = false;            // a filter only: nothing consumed
  ASSERT_TRUE(CapacityDemand(d, {{"memory", 10 * kGi}}, &need, &why));
  EXPECT_TRUE(need.empty());
}

TEST(ShareIdTest, FreshIdsHaveTheK8sUuidForm) {
  std::string a = NewShareId(), b = NewShareId();
  EXPECT_TRUE(IsShareId(a)) << a;
  EXPECT_NE(a, b);
  EXPECT_FALSE(IsShareId("not-a-uuid"));
  EXPECT_FALSE(IsShareId("0123456789ABCDEF0123456789abcdef0123"));
  EXPECT_FALSE(IsShareId("01234567-89AB-4def-8123-456789abcdef"));
  EXPECT_TRUE(IsShareId("01234567-89ab-4def-8123-456789abcdef"));
}

TEST(AllocatorShareTest, TwoSharesOfOneGpuThenTheThirdDoesNotFit) {
  auto a = MakeShared({SharedNode(1)});
  auto first = a->Allocate(OneShare("alice", 10 * kGi));
  auto second = a->Allocate(OneShare("bob", 24 * kGi));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->devices[0].device, "gpu-0");
  EXPECT_EQ(second->devices[0].device, "gpu-0");
  EXPECT_TRUE(IsShareId(first->devices[0].share_id));
  EXPECT_NE(first->devices[0].share_id, second->devices[0].share_id);
  EXPECT_EQ(first->devices[0].consumed_capacity,
            (std::map<std::string, int64_t>{{"memory", 10 * kGi}}));
  Explanation why;
  auto third = a->Allocate(OneShare("carol", 7 * kGi), &why);
  EXPECT_TRUE(absl::IsResourceExhausted(third.status())) << third.status();
  EXPECT_FALSE(why.never);
  EXPECT_THAT(why.Text(), HasSubstr("gpu-0 has 6Gi of 40Gi left (alice 10Gi, bob 24Gi); "
                                    "the request needs 7Gi"));
  const nlohmann::ordered_json all = why.Json();
  const auto& j = all["requests"][0]["short_of_capacity"][0];
  EXPECT_EQ(j["left"], "6Gi");
  EXPECT_EQ(j["holders"][1]["holder"], "bob");
  EXPECT_EQ(j["holders"][1]["amount"], "24Gi");
  EXPECT_TRUE(a->Allocate(OneShare("dave", 6 * kGi)).ok());  // exactly what is left
}

TEST(AllocatorShareTest, NoCapacityRequestTakesTheDefaultWholeGpu) {
  auto a = MakeShared({SharedNode(2)});
  auto whole = a->Allocate(OneShare("alice", 0));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->devices[0].consumed_capacity.at("memory"), 40 * kGi);
  EXPECT_FALSE(whole->devices[0].share_id.empty());
  auto small = a->Allocate(OneShare("bob", kMi));
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->devices[0].device, "gpu-1");  // gpu-0 has nothing left
}

TEST(AllocatorShareTest, WholeGpuClaimWaitsWhileSharesExist) {
  auto a = MakeShared({SharedNode(1)});
  ASSERT_TRUE(a->Allocate(OneShare("alice", 10 * kGi)).ok());
  Explanation why;
  auto whole = a->Allocate(OneShare("bob", 0), &why);
  EXPECT_TRUE(absl::IsResourceExhausted(whole.status())) << whole.status();
  EXPECT_THAT(why.Text(),
              HasSubstr("gpu-0 has 30Gi of 40Gi left (alice 10Gi); the request needs 40Gi"));
}

TEST(AllocatorShareTest, ARequestAboveTheDeviceCanNeverBeMet) {
  auto a = MakeShared({SharedNode(1)});
  Explanation why;
  auto r = a->Allocate(OneShare("alice", 41 * kGi), &why);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_TRUE(why.never);
  EXPECT_EQ(why.requests[0].capacity_rejected, 1);
  EXPECT_THAT(why.Text(), HasSubstr("(gpu-0: memory 41Gi is more than its 40Gi)"));
}

TEST(AllocatorShareTest, CapacityRequestOnAnExclusiveDeviceIsAFilterOnly) {
  auto a = MakeShared({BuildDevicePool({TestGpu(0), TestGpu(1, "H100", 81920)}, "node-a")});
  auto r = a->Allocate(OneShare("alice", 60 * kGi));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].device, "gpu-1");
  EXPECT_TRUE(r->devices[0].share_id.empty());
  EXPECT_TRUE(r->devices[0].consumed_capacity.empty());
  EXPECT_EQ(a->Allocate(OneShare("bob", kMi))->devices[0].device, "gpu-0");
}

TEST(AllocatorShareTest, ExistingSharesLoadedWithMarkAllocatedCount) {
  auto a = MakeShared({SharedNode(1)});
  std::map<std::string, int64_t> held{{"memory", 30 * kGi}};
  ASSERT_TRUE(a->MarkAllocated("node-a", "gpu-0", "ns/alice", &held).ok());
  Explanation why;
  EXPECT_FALSE(a->Allocate(OneShare("bob", 11 * kGi), &why).ok());
  EXPECT_THAT(why.Text(), HasSubstr("gpu-0 has 10Gi of 40Gi left (ns/alice 30Gi)"));
  EXPECT_TRUE(a->Allocate(OneShare("bob", 10 * kGi)).ok());
  // Without consumed capacity the whole device is held.
  auto b = MakeShared({SharedNode(1)});
  ASSERT_TRUE(b->MarkAllocated("node-a", "gpu-0", "old").ok());
  Explanation taken;
  EXPECT_FALSE(b->Allocate(OneShare("bob", kMi), &taken).ok());
  EXPECT_THAT(taken.Text(), HasSubstr("gpu-0 is taken by old"));
}

TEST(AllocatorShareTest, SeveralRequestsOfOneClaimMayShareADeviceUnlessDistinct) {
  auto a = MakeShared({SharedNode(1)});
  Claim two{"alice", {Share("a", 10 * kGi), Share("b", 10 * kGi)}, {}};
  auto r = a->Allocate(two);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[1].device, "gpu-0");
  EXPECT_NE(r->devices[0].share_id, r->devices[1].share_id);
  Claim distinct{"bob", {Share("a", kGi), Share("b", kGi)}, {{{}, "", "gpu.canhazgpu.dev/uuid"}}};
  Explanation why;
  EXPECT_FALSE(a->Allocate(distinct, &why).ok());
  EXPECT_THAT(why.unmet_constraints, ElementsAre("distinctAttribute gpu.canhazgpu.dev/uuid"));
  auto b = MakeShared({SharedNode(2)});
  auto apart = b->Allocate(distinct);
  ASSERT_TRUE(apart.ok()) << apart.status();
  EXPECT_EQ(apart->devices[0].device, "gpu-0");
  EXPECT_EQ(apart->devices[1].device, "gpu-1");
}

TEST(AllocatorShareTest, OneRequestNeverTakesTheSameDeviceTwice) {
  auto a = MakeShared({SharedNode(1)});
  Claim claim{"alice", {Share("gpu", kGi, 2)}, {}};
  auto r = a->Allocate(claim);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
}

// kubernetes#133705: after a partly consumed device fails a later request,
// the search must go back and try the next device for the earlier one.
TEST(AllocatorShareTest, BacktracksAcrossAPartlyConsumedDevice) {
  auto a = MakeShared({SharedNode(2)});
  std::map<std::string, int64_t> held{{"memory", 2 * kGi}};
  ASSERT_TRUE(a->MarkAllocated("node-a", "gpu-0", "x", &held).ok());
  Claim claim{"alice",
              {Share("small", 5 * kGi),
               Share("big", 36 * kGi, 1, {"device.attributes['gpu.canhazgpu.dev'].index == 0"})},
              {}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].device, "gpu-1");  // small moved off gpu-0
  EXPECT_EQ(r->devices[1].device, "gpu-0");
  // The failed attempt left nothing consumed: gpu-1 still has 35Gi.
  EXPECT_TRUE(a->Allocate(OneShare("bob", 35 * kGi)).ok());
  EXPECT_FALSE(a->Allocate(OneShare("carol", 3 * kGi)).ok());  // gpu-0 has 2Gi left
}

TEST(AllocatorShareTest, AllModeNeedsTheCapacityOnEveryMatchingDevice) {
  auto a = MakeShared({SharedNode(2)});
  RequestSpec all{.device_class = "gpu", .all = true};
  all.capacity_requests["memory"] = 10 * kGi;
  Claim claim{"alice", {{"every", {all}, false}}, {}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices.size(), 2u);
  ASSERT_TRUE(a->Allocate(OneShare("bob", 25 * kGi)).ok());  // gpu-0: 5Gi left
  claim.name = "carol";
  EXPECT_TRUE(absl::IsResourceExhausted(a->Allocate(claim).status()));
}

TEST(AllocatorShareTest, FirstAvailableFallsBackToASmallerShare) {
  auto a = MakeShared({SharedNode(1)});
  RequestSpec big{.name = "big", .device_class = "gpu"},
      small{.name = "small", .device_class = "gpu"};
  big.capacity_requests["memory"] = 50 * kGi;
  small.capacity_requests["memory"] = 20 * kGi;
  Claim claim{"alice", {{"gpu", {big, small}, true}}, {}};
  auto r = a->Allocate(claim);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].request, "gpu/small");
  EXPECT_EQ(r->devices[0].consumed_capacity.at("memory"), 20 * kGi);
}

TEST(AllocatorShareTest, ValidValuesPolicyRoundsTheShare) {
  DevicePool pool = SharedNode(1);
  pool.devices[0].request_policies["memory"] = {
      40 * kGi, {10 * kGi, 20 * kGi, 40 * kGi}, std::nullopt, std::nullopt, std::nullopt};
  auto a = MakeShared({pool});
  auto r = a->Allocate(OneShare("alice", 11 * kGi));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].consumed_capacity.at("memory"), 20 * kGi);
  EXPECT_TRUE(a->Allocate(OneShare("bob", 20 * kGi)).ok());
  EXPECT_FALSE(a->Allocate(OneShare("carol", kMi)).ok());  // 10Gi minimum, 0 left
}

TEST(AllocatorShareTest, EveryCapacityIsInConsumedCapacityEvenAtZero) {
  DevicePool pool = SharedNode(1);
  pool.devices[0].capacity["cores"] = 100;
  pool.devices[0].request_policies["cores"] = {0, {}, 0, 100, 1};
  auto a = MakeShared({pool});
  auto r = a->Allocate(OneShare("alice", kGi));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->devices[0].consumed_capacity,
            (std::map<std::string, int64_t>{{"cores", 0}, {"memory", kGi}}));
}

}  // namespace
}  // namespace canhazgpu::dra

namespace canhazgpu::dra {
namespace {

// Nodes whose GPUs are all partly used are skipped without a search only
// when no request could fit what is left; the answers stay the search's.
TEST(AllocatorShareTest, PartlyUsedNodesAreSkippedOnlyWhenNothingFits) {
  DevicePool small_default = SharedNode(1, "node-a");
  small_default.devices[0].request_policies["memory"].default_value = kGi;
  auto a = MakeShared({small_default, SharedNode(1, "node-b")});
  std::map<std::string, int64_t> held{{"memory", 38 * kGi}};
  ASSERT_TRUE(a->MarkAllocated("node-a", "gpu-0", "x", &held).ok());
  auto big = a->Allocate(OneShare("alice", 3 * kGi));  // node-a has 2Gi left
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->node, "node-b");
  // No capacity asked: node-a's policy default (1Gi) fits what is left,
  // so node-a is searched, not skipped.
  auto by_default = a->Allocate(OneShare("carol", 0));
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(by_default->node, "node-a");
  EXPECT_EQ(by_default->devices[0].consumed_capacity.at("memory"), kGi);
  auto bob = a->Allocate(OneShare("bob", 2 * kGi));  // node-a: 1Gi left
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_EQ(bob->node, "node-b");
  Explanation why;
  EXPECT_TRUE(absl::IsResourceExhausted(a->Allocate(OneShare("dave", 36 * kGi), &why).status()));
  EXPECT_EQ(why.node, "node-a");
  EXPECT_THAT(why.Text(), HasSubstr("gpu-0 has 1Gi of 40Gi left (x 38Gi, carol 1Gi)"));
}

}  // namespace
}  // namespace canhazgpu::dra
