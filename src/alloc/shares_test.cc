// Sharing a GPU by memory on one host (ADR 0018): the choice of GPUs, the
// reserve/release lifecycle and the queue, on the in-memory store.
#include "alloc/shares.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "alloc/queue.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/memory_state_store.h"

namespace canhazgpu::alloc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kGi = uint64_t{1} << 30;

class SharesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InitializePool(store_, {3, "fake", ""}, false, machine_).ok());
    for (int i = 0; i < 3; ++i)
      gpus_.push_back(GpuInfo{.index = i, .memory_total_bytes = 80 * kGi});
    table_.Add({.pid = 700, .uid = 1001, .start_ticks = 9});  // bob's waiting process
  }

  absl::StatusOr<std::vector<int>> Share(const Caller& who, uint64_t gib, int count = 1,
                                         std::vector<int> ids = {}) {
    ReserveRequest r{.count = count,
                     .ids = std::move(ids),
                     .duration = std::chrono::hours(2),
                     .memory = gib * kGi};
    return ReserveGpus(store_, gpus_, who, r, machine_);
  }
  // Puts a waiter in the queue as its own (live) process would.
  void Waits(QueueEntry entry) {
    table_.Add({.pid = 800, .uid = entry.uid, .start_ticks = 9});
    entry.waiter = {800, 9};
    ASSERT_TRUE(
        store_
            .Update([&](store::StateTransaction& t) { return t.InsertQueueEntry(entry).status(); })
            .ok());
  }
  std::vector<GpuStatus> Status() {
    return CollectStatus(store_, gpus_, kDefaultMemoryThresholdMiB * kMiB, machine_)->gpus;
  }

  store::MemoryStateStore store_;
  host::FakeClock clock_;
  host::FakeProcessTable table_;
  Machine machine_{clock_, table_};
  std::vector<GpuInfo> gpus_;
  Caller alice_{1000, "alice"}, bob_{1001, "bob"}, carol_{1002, "carol"};
};

TEST_F(SharesTest, TwoUsersShareOneGpuAndStatusSaysWhatIsLeft) {
  ASSERT_THAT(*Share(alice_, 50), ElementsAre(0));
  ASSERT_THAT(*Share(bob_, 24), ElementsAre(0)) << "a shared GPU that fits comes before free ones";
  std::vector<GpuStatus> status = Status();
  EXPECT_EQ(status[0].state, GpuState::kInUse);
  ASSERT_EQ(status[0].shares.size(), 2u);
  EXPECT_EQ(DescribeShares(status[0]), "5.5Gi of 79.5Gi left (alice 50Gi, bob 24Gi)");
  EXPECT_EQ(status[1].state, GpuState::kAvailable);
}

TEST_F(SharesTest, BestFitKeepsWholeGpusFree) {
  ASSERT_THAT(*Share(alice_, 60, 1, {0}), ElementsAre(0));
  ASSERT_THAT(*Share(alice_, 40, 1, {1}), ElementsAre(1));
  // 10Gi fits on both shared GPUs: gpu 0 has the least room that fits.
  EXPECT_THAT(*Share(bob_, 10), ElementsAre(0));
  // 30Gi fits only on gpu 1; gpu 2 stays whole.
  EXPECT_THAT(*Share(bob_, 30), ElementsAre(1));
  EXPECT_EQ(Status()[2].state, GpuState::kAvailable);
}

TEST_F(SharesTest, SeveralSharesGoToDistinctGpus) {
  auto ids = Share(alice_, 10, 2);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_NE(ids->at(0), ids->at(1));
}

TEST_F(SharesTest, AShareLargerThanAnyGpuCanShareIsRefusedForGood) {
  auto ids = Share(alice_, 80);
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument) << ids.status();
  EXPECT_EQ(ids.status().message(),
            "--gpu-mem 80Gi is more than a GPU here can share: at most 79.5Gi (its memory less a "
            "512Mi margin)");
}

TEST_F(SharesTest, MigModeGpusAreNeverShared) {
  for (GpuInfo& g : gpus_) g.mig_mode = MigMode::kEnabled;
  gpus_[2].mig_mode = MigMode::kDisabled;
  EXPECT_THAT(*Share(alice_, 10), ElementsAre(2));
  auto two = Share(alice_, 10, 2);
  EXPECT_EQ(two.status().code(), absl::StatusCode::kInvalidArgument) << two.status();
}

TEST_F(SharesTest, WholeGpuRequestDoesNotTakeASharedGpu) {
  ASSERT_TRUE(Share(alice_, 10, 1, {0}).ok());
  ASSERT_TRUE(ReserveGpus(store_, gpus_, bob_, {.count = 2}, machine_).ok());
  auto whole = ReserveGpus(store_, gpus_, carol_, {.ids = {0}}, machine_);
  EXPECT_TRUE(absl::IsResourceExhausted(whole.status())) << whole.status();
}

TEST_F(SharesTest, ThirdShareThatDoesNotFitSaysWhy) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 50).ok());
  ASSERT_TRUE(Share(bob_, 24).ok());
  auto carol = Share(carol_, 10);
  EXPECT_TRUE(absl::IsResourceExhausted(carol.status())) << carol.status();
  EXPECT_THAT(std::string(carol.status().message()),
              HasSubstr("not enough GPU memory free for 1 share(s) of 10Gi: gpu 0: 5.5Gi of "
                        "79.5Gi left (alice 50Gi, bob 24Gi)"));
}

TEST_F(SharesTest, ReleaseEndsOnlyTheCallersShares) {
  ASSERT_TRUE(Share(alice_, 50, 1, {0}).ok());
  ASSERT_TRUE(Share(bob_, 24, 1, {0}).ok());
  auto released = ReleaseGpus(store_, bob_, {0}, false, machine_);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_THAT(*released, ElementsAre(0));
  std::vector<GpuStatus> status = Status();
  ASSERT_EQ(status[0].shares.size(), 1u);
  EXPECT_EQ(status[0].shares[0].user, "alice");
  // Without ids: every manual reservation of the caller, shares included.
  ASSERT_THAT(*ReleaseGpus(store_, alice_, {}, false, machine_), ElementsAre(0));
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

TEST_F(SharesTest, ExpiredSharesEnd) {
  ASSERT_TRUE(Share(alice_, 50, 1, {0}).ok());
  clock_.Advance(std::chrono::hours(3));
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

TEST_F(SharesTest, AShareThatDoesNotFitWaitsAndIsServedWhenMemoryFrees) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 70).ok());
  WaitProgress last;
  int sleeps = 0;
  WaitOptions options{.waiter = {700, 9},
                      .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> { return gpus_; },
                      .sleep =
                          [&](Duration) {
                            if (++sleeps == 2) {
                              EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
                            }
                            return sleeps > 5 ? WakeReason::kSignal : WakeReason::kTimeout;
                          },
                      .on_progress = [&](const WaitProgress& p) { last = p; }};
  auto ids = AcquireGpus(store_, bob_, {.count = 1, .memory = 20 * kGi}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0));
  ASSERT_EQ(last.blockers.size(), 1u);
  EXPECT_THAT(last.blockers[0], HasSubstr("gpu 0: 9.5Gi of 79.5Gi left (alice 70Gi)"));
  EXPECT_EQ(Status()[0].shares.at(0).user, "bob");
}

TEST_F(SharesTest, WholeGpuRequestWaitsWhileSharesExist) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 10).ok());
  int sleeps = 0;
  WaitOptions options{.waiter = {700, 9},
                      .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> { return gpus_; },
                      .sleep =
                          [&](Duration) {
                            if (++sleeps == 2) {
                              EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
                            }
                            return sleeps > 5 ? WakeReason::kSignal : WakeReason::kTimeout;
                          },
                      .on_progress = [](const WaitProgress&) {}};
  auto ids = AcquireGpus(store_, bob_, {.count = 1}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(sleeps, 2) << "served only once the share ended";
  EXPECT_TRUE(Status()[0].shares.empty());
}

// Backfill with shares: a small share that fits now goes ahead of a waiting
// larger one, beside the room the waiters ahead would take.
TEST_F(SharesTest, SmallShareBackfillsBesideWaitersAhead) {
  gpus_.resize(2);
  ASSERT_TRUE(InitializePool(store_, {2, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 70, 1, {0}).ok());
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.ids = {1}}, machine_).ok());
  Waits({.uid = 1002, .user = "carol", .count = 1, .memory = 20 * kGi});
  EXPECT_THAT(*Share(bob_, 5), ElementsAre(0)) << "5Gi fits beside alice; carol's 20Gi does not";
  ASSERT_TRUE(ReleaseGpus(store_, alice_, {1}, false, machine_).ok());
  // Carol would take 20Gi of gpu 1 now; 60Gi more would not fit beside her.
  EXPECT_TRUE(absl::IsResourceExhausted(Share(bob_, 60, 1, {1}).status()));
  EXPECT_TRUE(Share(bob_, 50, 1, {1}).ok());
}

// ... and never takes the free GPU a whole-GPU waiter ahead gets.
TEST_F(SharesTest, ShareLeavesAWholeGpuWaiterAheadItsFreeGpu) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  Waits({.uid = 1002, .user = "carol", .count = 1});
  auto bob = Share(bob_, 5);
  EXPECT_TRUE(absl::IsResourceExhausted(bob.status())) << bob.status();
  EXPECT_THAT(std::string(bob.status().message()), HasSubstr("wanted by carol, who queued first"));
}

}  // namespace
}  // namespace canhazgpu::alloc
