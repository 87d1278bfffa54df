#include "driver/host_queue.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

constexpr uint64_t kGi = uint64_t{1} << 30;

QueueEntry Waiter(int64_t id, const std::string& user, int count, uint64_t memory = 0) {
  return QueueEntry{.id = id,
                    .uid = static_cast<uint32_t>(1000 + id),
                    .user = user,
                    .count = count,
                    .memory = memory,
                    .enqueued = TimePoint(std::chrono::seconds(1'790'000'000 + id))};
}

alloc::GpuStatus Free(int gpu) {
  alloc::GpuStatus s{.gpu = gpu};
  s.info = GpuInfo{.index = gpu, .memory_total_bytes = 80 * kGi};
  return s;
}

// A GPU of 80Gi with one pod's share of `gib`.
alloc::GpuStatus PodShare(int gpu, uint64_t gib) {
  alloc::GpuStatus s{.gpu = gpu, .state = alloc::GpuState::kInUse};
  s.info = GpuInfo{.index = gpu, .memory_total_bytes = 80 * kGi};
  s.shares = {Reservation{.gpu = gpu,
                          .memory = gib * kGi,
                          .share = "pod-" + std::to_string(gpu),
                          .shareable = 79 * kGi + kGi / 2,
                          .user = "kubernetes",
                          .kind = ReservationKind::kK8s}};
  s.reservation = s.shares[0];
  return s;
}

TEST(KeptForHostQueueTest, NoWaitersKeepNothing) {
  EXPECT_THAT(KeptForHostQueue({}, {Free(0), PodShare(1, 10)}, /*sharing=*/true), IsEmpty());
}

// Without sharing: the free GPUs a waiter would take now, and no more.
TEST(KeptForHostQueueTest, AWholeWaiterKeepsTheFreeGpusItWouldTake) {
  const auto kept =
      KeptForHostQueue({Waiter(1, "alice", 1)}, {Free(0), Free(1)}, /*sharing=*/false);
  ASSERT_EQ(kept.size(), 1u);
  const auto& [gpu, keeps] = *kept.begin();
  EXPECT_TRUE(KeptWhole(kept, gpu));
  EXPECT_THAT(keeps, ElementsAre(Field(&QueueKeep::user, "alice")));
  EXPECT_EQ(keeps[0].since, TimePoint(std::chrono::seconds(1'790'000'001)));
  EXPECT_EQ(KeptMemory(kept, gpu), 0u);
}

// A local share waiter on a node that does not share: the free GPU it would
// take for its share is then held, so it is kept whole.
TEST(KeptForHostQueueTest, AShareWaiterKeepsAFreeGpuWholeWhenTheNodeDoesNotShare) {
  const auto kept =
      KeptForHostQueue({Waiter(1, "alice", 1, 10 * kGi)}, {Free(0)}, /*sharing=*/false);
  EXPECT_TRUE(KeptWhole(kept, 0));
}

// Sharing: a whole-GPU waiter keeps the shared GPU it waits to have whole,
// so that pods' shares do not keep landing on it.
TEST(KeptForHostQueueTest, AWholeWaiterKeepsASharedGpuWholeWhileItsSharesDrain) {
  const auto kept = KeptForHostQueue({Waiter(1, "alice", 1)}, {PodShare(0, 10)}, true);
  EXPECT_TRUE(KeptWhole(kept, 0));
  EXPECT_THAT(kept.at(0), ElementsAre(Field(&QueueKeep::user, "alice")));
}

// Sharing: a waiting share keeps its memory, the rest stays published.
TEST(KeptForHostQueueTest, AShareWaiterKeepsItsMemoryOnTheGpuItWaitsFor) {
  // 79.5Gi to share, a pod holds 50: bob's 60Gi waits and keeps 60Gi there.
  const auto kept = KeptForHostQueue({Waiter(1, "bob", 1, 60 * kGi)}, {PodShare(0, 50)}, true);
  EXPECT_FALSE(KeptWhole(kept, 0));
  EXPECT_EQ(KeptMemory(kept, 0), 60 * kGi);
  EXPECT_THAT(kept.at(0), ElementsAre(Field(&QueueKeep::memory, 60 * kGi)));
}

// Sharing: a whole waiter served by a free GPU keeps that one, not a
// shared one.
TEST(KeptForHostQueueTest, AWholeWaiterServedByAFreeGpuLeavesTheSharedOnes) {
  const auto kept = KeptForHostQueue({Waiter(1, "alice", 1)}, {PodShare(0, 10), Free(1)}, true);
  EXPECT_FALSE(kept.contains(0));
  EXPECT_TRUE(KeptWhole(kept, 1));
}

}  // namespace
}  // namespace canhazgpu::driver
