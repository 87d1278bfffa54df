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
  std::vector<std::string> blockers;
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
                      .on_progress =
                          [&](const WaitProgress& p) {
                            if (sleeps == 0) blockers = p.blockers;
                          }};
  auto ids = AcquireGpus(store_, bob_, {.count = 1}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(blockers, ElementsAre("alice (shares) (0)"));
  EXPECT_EQ(sleeps, 2) << "served only once the share ended";
  EXPECT_TRUE(Status()[0].shares.empty());
}

// Backfill with shares: a small share that fits now goes ahead of a waiting
// larger one where it does not take the memory the larger one waits for.
TEST_F(SharesTest, SmallShareBackfillsBesideWaitersAhead) {
  gpus_.resize(2);
  ASSERT_TRUE(InitializePool(store_, {2, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 70, 1, {0}).ok());
  ASSERT_TRUE(Share(alice_, 60, 1, {1}).ok());
  // Carol's 20Gi fits nowhere now; she waits for gpu 1, the most room.
  Waits({.uid = 1002, .user = "carol", .count = 1, .memory = 20 * kGi});
  EXPECT_THAT(*Share(bob_, 5), ElementsAre(0)) << "5Gi fits beside alice on the GPU carol "
                                                  "does not wait for";
  auto on_hers = Share(bob_, 5, 1, {1});
  EXPECT_TRUE(absl::IsResourceExhausted(on_hers.status())) << on_hers.status();
  EXPECT_EQ(on_hers.status().message(),
            "gpu 1: 19.5Gi of 79.5Gi left (alice 60Gi); 20Gi kept for carol, who queued first; "
            "5Gi asked");
  ASSERT_TRUE(ReleaseGpus(store_, alice_, {1}, false, machine_).ok());
  // Carol would take 20Gi of gpu 1 now; 60Gi more would not fit beside her.
  auto too_much = Share(bob_, 60, 1, {1});
  EXPECT_TRUE(absl::IsResourceExhausted(too_much.status()));
  EXPECT_EQ(too_much.status().message(),
            "gpu 1: 59.5Gi of 79.5Gi left; 20Gi kept for carol, who queued first; 60Gi asked");
  EXPECT_TRUE(Share(bob_, 50, 1, {1}).ok());
}

// Bob waits for a whole GPU behind alice's share, and every sleep of his
// wait a newcomer asks for a small share: each is refused naming him, none
// lands on the GPU he waits for, so he gets it as soon as alice's ends.
TEST_F(SharesTest, StreamOfSharesDoesNotStarveAWholeGpuWaiter) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 10).ok());
  int sleeps = 0;
  std::vector<std::string> refusals;
  WaitOptions options{
      .waiter = {700, 9},
      .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> { return gpus_; },
      .sleep =
          [&](Duration) {
            ++sleeps;
            auto newcomer = Share(carol_, 5);
            refusals.push_back(newcomer.ok() ? "served" : std::string(newcomer.status().message()));
            if (sleeps == 3) {
              EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
            }
            return sleeps > 6 ? WakeReason::kSignal : WakeReason::kTimeout;
          }};
  auto ids = AcquireGpus(store_, bob_, {.count = 1}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0));
  EXPECT_EQ(sleeps, 3) << "served at the poll after alice's share ended";
  ASSERT_EQ(refusals.size(), 3u);
  for (const std::string& why : refusals) {
    EXPECT_THAT(why, HasSubstr("gpu 0: wanted whole by bob, who queued first"));
  }
  auto after = Share(carol_, 5);
  EXPECT_THAT(std::string(after.status().message()), HasSubstr("gpu 0: reserved whole by bob"));
}

// A whole-GPU waiter keeps only as many shared GPUs as it lacks: the others
// still take shares beside it.
TEST_F(SharesTest, WholeGpuWaiterKeepsOnlyAsManySharedGpusAsItLacks) {
  const uint64_t in_use[] = {10, 12, 11};
  for (int gpu = 0; gpu < 3; ++gpu) ASSERT_TRUE(Share(alice_, in_use[gpu], 1, {gpu}).ok());
  Waits({.uid = 1002, .user = "carol", .count = 1});
  // Gpu 0 has the least in use: carol waits for it; of the others, gpu 1
  // has the least room that fits (best fit).
  EXPECT_THAT(*Share(bob_, 5), ElementsAre(1));
  auto on_hers = Share(bob_, 5, 1, {0});
  EXPECT_EQ(on_hers.status().message(),
            "gpu 0: wanted whole by carol, who queued first (waiting for its shares); 5Gi asked");
  EXPECT_THAT(*Share(bob_, 5, 1, {2}), ElementsAre(2));
}

// Alice's large share waits behind bob's; small shares asked for while it
// waits do not take the memory it waits for, so it gets it when bob's ends.
TEST_F(SharesTest, StreamOfSmallSharesDoesNotStarveALargeShare) {
  gpus_.resize(1);
  ASSERT_TRUE(InitializePool(store_, {1, "fake", ""}, true, machine_).ok());
  ASSERT_TRUE(Share(alice_, 70).ok());
  int sleeps = 0;
  std::vector<std::string> refusals;
  WaitOptions options{
      .waiter = {700, 9},
      .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> { return gpus_; },
      .sleep =
          [&](Duration) {
            ++sleeps;
            auto newcomer = Share(carol_, 5);
            refusals.push_back(newcomer.ok() ? "served" : std::string(newcomer.status().message()));
            if (sleeps == 2) {
              EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
            }
            return sleeps > 5 ? WakeReason::kSignal : WakeReason::kTimeout;
          }};
  auto ids = AcquireGpus(store_, bob_, {.count = 1, .memory = 20 * kGi}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(sleeps, 2);
  ASSERT_EQ(refusals.size(), 2u);
  for (const std::string& why : refusals) {
    EXPECT_THAT(why, HasSubstr("gpu 0: 9.5Gi of 79.5Gi left (alice 70Gi); 20Gi kept for bob, "
                               "who queued first"));
  }
  EXPECT_TRUE(Share(carol_, 5).ok()) << "beside bob's share now";
  EXPECT_EQ(Status()[0].shares.size(), 2u);
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
