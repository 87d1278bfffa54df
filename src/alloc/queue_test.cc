// The queue's rules on the in-memory store, with a fake clock and process
// table: arrival order, partial holds, backfill, dead waiters, impossible
// requests.
#include "alloc/queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/status_macros.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/claim_reservations.h"
#include "store/memory_state_store.h"

namespace canhazgpu::alloc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InitializePool(store_, {4, "fake", ""}, false, machine_).ok());
    for (int i = 0; i < 4; ++i) gpus_.push_back(GpuInfo{.index = i});
    table_.Add({.pid = 700, .uid = 1001, .start_ticks = 9});  // bob's waiting process
  }

  // Bob asks for `count` GPUs and waits; `polls` sleeps happen, each running
  // `between` first, then the wait is interrupted as by Ctrl-C.
  absl::StatusOr<std::vector<int>> BobWaits(int count, int polls, std::function<void()> between) {
    int slept = 0;
    return BobWaitsWith(count, [&] {
      if (slept++ == polls) return WakeReason::kSignal;
      between();
      return WakeReason::kTimeout;
    });
  }
  // Bob waits; every sleep returns what `sleep` says.
  absl::StatusOr<std::vector<int>> BobWaitsWith(int count, std::function<WakeReason()> sleep) {
    return BobAsks({.count = count}, std::move(sleep));
  }
  absl::StatusOr<std::vector<int>> BobAsks(const ReserveRequest& request,
                                           std::function<WakeReason()> sleep) {
    WaitOptions options{.waiter = {700, 9},
                        .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> {
                          ++gpu_queries_;
                          if (!provider_error_.ok()) return provider_error_;
                          return gpus_;
                        },
                        .sleep = [&](Duration) { return sleep(); },
                        .on_progress = [&](const WaitProgress& p) { last_ = p; }};
    return AcquireGpus(store_, bob_, request, machine_, options);
  }
  std::vector<QueueRow> Queue() { return *CollectQueue(store_, machine_); }
  // Puts a waiter in the queue as its own process would (its pid alive), but
  // without polling: it holds nothing until the test says so.
  int64_t Enqueue(QueueEntry entry, int64_t pid, store::StateStore* store = nullptr) {
    table_.Add({.pid = pid, .uid = entry.uid, .start_ticks = 9});
    entry.waiter = {pid, 9};
    int64_t id = 0;
    EXPECT_TRUE((store != nullptr ? *store : store_)
                    .Update([&](store::StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(id, t.InsertQueueEntry(entry));
                      return absl::OkStatus();
                    })
                    .ok());
    return id;
  }
  void Dequeue(int64_t id) {
    EXPECT_TRUE(
        store_.Update([&](store::StateTransaction& t) { return t.DeleteQueueEntry(id); }).ok());
  }

  store::MemoryStateStore store_;
  host::FakeClock clock_;
  host::FakeProcessTable table_;
  Machine machine_{clock_, table_};
  std::vector<GpuInfo> gpus_;
  Caller alice_{1000, "alice"}, bob_{1001, "bob"}, carol_{1002, "carol"};
  WaitProgress last_;
  int gpu_queries_ = 0;
  absl::Status provider_error_;
};

TEST_F(QueueTest, HeadCollectsFreedGpusAndIsServedBeforeANewcomer) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3}, machine_).ok());
  int poll = 0;
  auto ids = BobWaits(2, 10, [&] {
    if (++poll != 1) return;
    // Bob already holds the one free GPU; a newcomer may not overtake him
    // even once Alice frees hers.
    EXPECT_EQ(Queue().at(0).held.size(), 1u);
    auto carol = ReserveGpus(store_, gpus_, carol_, {.count = 1}, machine_);
    EXPECT_TRUE(absl::IsResourceExhausted(carol.status())) << carol.status();
    EXPECT_THAT(std::string(carol.status().message()), HasSubstr("already waiting"));
    ASSERT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 2u);
  EXPECT_TRUE(Queue().empty());
}

// A GPU prepared for a Kubernetes claim is simply not free: the head of the
// queue holds the others, says it waits for the claim, and completes once
// the driver releases the claim. The claim's GPU is never a partial hold.
TEST_F(QueueTest, HeadWaitsForAGpuOfAKubernetesClaim) {
  const KubeClaimRef claim{.namespace_name = "ml", .name = "train", .uid = "u", .pod = "p"};
  ASSERT_TRUE(store::ReserveForClaim(store_, {2}, claim, "alice", 1000, clock_.Now()).ok());
  int poll = 0;
  auto ids = BobWaits(4, 10, [&] {
    if (++poll != 1) return;
    EXPECT_EQ(last_.held, 3);
    EXPECT_THAT(last_.blockers, ElementsAre("Kubernetes claim ml/train (pod p) (2)"));
    ASSERT_TRUE(store::ReleaseClaim(store_, "u", clock_.Now()).ok());
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0, 1, 2, 3));
}

TEST_F(QueueTest, InterruptedWaiterLeavesAndReturnsItsHolds) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3}, machine_).ok());
  auto ids = BobWaits(2, 2, [] {});
  EXPECT_TRUE(absl::IsCancelled(ids.status())) << ids.status();
  EXPECT_EQ(last_.held, 1);
  EXPECT_TRUE(Queue().empty());
  EXPECT_TRUE(ReserveGpus(store_, gpus_, carol_, {.count = 1}, machine_).ok())
      << "bob's partial hold went back to the pool";
}

// Issue 14: the provider fails as a whole (the driver library went away).
// The waiter stops at once with the driver's message and leaves the queue,
// instead of waiting behind GPUs that are all in error.
TEST_F(QueueTest, FailingProviderEndsTheWaitWithItsMessage) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3}, machine_).ok());
  auto ids = BobWaitsWith(2, [&] {
    provider_error_ = absl::UnavailableError("cannot query GPUs: libnvidia-ml.so.1 not found");
    return WakeReason::kTimeout;
  });
  EXPECT_TRUE(absl::IsUnavailable(ids.status())) << ids.status();
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("libnvidia-ml.so.1"));
  EXPECT_TRUE(Queue().empty());
  EXPECT_TRUE(ReserveGpus(store_, gpus_, carol_, {.count = 1}, machine_).ok())
      << "bob's partial hold went back to the pool";
}

TEST_F(QueueTest, DeadWaiterIsReapedByTheNextCommand) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3}, machine_).ok());
  auto ids = BobWaits(2, 1, [&] { table_.Remove(700); });  // SIGKILLed mid-wait
  EXPECT_FALSE(ids.ok());
  EXPECT_TRUE(Queue().empty());
  auto carol = ReserveGpus(store_, gpus_, carol_, {.count = 1}, machine_);
  ASSERT_TRUE(carol.ok()) << carol.status();
}

// Every waiter hears of every change, but one far back in a long queue only
// re-reads its position, without querying GPUs and processes, until it is
// next in line.
TEST_F(QueueTest, WaitersFarBackOnlyRereadTheirPositionOnChanges) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 4}, machine_).ok());
  std::vector<int64_t> ahead;
  for (int64_t pid : {701, 702}) {
    table_.Add({.pid = pid, .uid = 1002, .start_ticks = 9});
    ASSERT_TRUE(store_
                    .Update([&](store::StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(int64_t id,
                                       t.InsertQueueEntry({.uid = 1002,
                                                           .user = "carol",
                                                           .kind = ReservationKind::kManual,
                                                           .count = 1,
                                                           .waiter = {pid, 9}}));
                      ahead.push_back(id);
                      return absl::OkStatus();
                    })
                    .ok());
  }
  int sleeps = 0;
  auto ids = BobWaitsWith(1, [&] {
    ++sleeps;
    if (sleeps == 1) {
      EXPECT_EQ(last_.position, 3);
      EXPECT_EQ(gpu_queries_, 1);
      return WakeReason::kChanged;  // nothing that concerns bob
    }
    if (sleeps == 2) {
      EXPECT_EQ(gpu_queries_, 1) << "a change far back must not cost a full poll";
      // The head completes and leaves: bob is next in line now.
      EXPECT_TRUE(
          store_.Update([&](store::StateTransaction& t) { return t.DeleteQueueEntry(ahead[0]); })
              .ok());
      return WakeReason::kChanged;
    }
    return WakeReason::kSignal;
  });
  EXPECT_TRUE(absl::IsCancelled(ids.status())) << ids.status();
  EXPECT_EQ(gpu_queries_, 2);
  EXPECT_EQ(last_.position, 2);
}

TEST_F(QueueTest, WaitsForAMatchingGpuNotAnyGpu) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3}, machine_).ok());  // 0, 1, 2
  ReserveRequest a100{.count = 1, .eligible = std::vector<int>{1}, .selector = "--product a100"};
  // GPU 3 is free but not what bob asked for: he queues for GPU 1.
  int poll = 0;
  auto ids = BobAsks(a100, [&] {
    if (++poll == 1) {
      std::vector<QueueRow> queue = Queue();
      EXPECT_TRUE(queue.at(0).held.empty());
      EXPECT_EQ(queue.at(0).entry.selector, "--product a100");
      EXPECT_THAT(last_.blockers, ElementsAre("alice (1)"));
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {0}, false, machine_).ok());
    } else if (poll == 2) {
      EXPECT_EQ(last_.held, 0) << "GPU 0 does not match either";
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {1}, false, machine_).ok());
    } else {
      ADD_FAILURE() << "served after GPU 1 was freed";
      return WakeReason::kSignal;
    }
    return WakeReason::kChanged;
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(1));
  // More than match can never be served: refused, not queued.
  auto two =
      BobAsks({.count = 2, .eligible = std::vector<int>{1}}, [] { return WakeReason::kSignal; });
  EXPECT_TRUE(absl::IsInvalidArgument(two.status())) << two.status();
  EXPECT_TRUE(Queue().empty());
}

// Backfill (queue.h): the head waits for the one GPU its selector matches
// (an 80 GB GPU, busy); a newcomer asking for any GPU gets a free one at once,
// never the head's.
TEST_F(QueueTest, NewcomerTakesAFreeGpuTheSelectorHeadCannotUse) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.ids = {0}}, machine_).ok());
  ReserveRequest big{.count = 1, .eligible = std::vector<int>{0}, .selector = "--min-memory 80Gi"};
  int poll = 0;
  auto ids = BobAsks(big, [&] {
    if (++poll == 1) {
      EXPECT_THAT(last_.blockers, ElementsAre("alice (0)"));
      auto carol = ReserveGpus(store_, gpus_, carol_, {.count = 1}, machine_);
      EXPECT_TRUE(carol.ok()) << carol.status();
      if (!carol.ok()) return WakeReason::kSignal;
      EXPECT_NE(carol->at(0), 0);
      EXPECT_EQ(Queue().size(), 1u) << "carol was served, not queued";
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
      return WakeReason::kChanged;
    }
    ADD_FAILURE() << "served once alice freed GPU 0";
    return WakeReason::kSignal;
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0));
}

// The head waits for ids 0 and 1 (busy); a newcomer asking for two GPUs gets
// 2 and 3 at once. A GPU the head asked for still goes to the head.
TEST_F(QueueTest, NewcomerTakesGpusTheIdsHeadDidNotAskFor) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.ids = {0, 1}}, machine_).ok());
  int poll = 0;
  auto ids = BobAsks({.ids = {0, 1}}, [&] {
    if (++poll == 1) {
      auto carol = ReserveGpus(store_, gpus_, carol_, {.count = 2}, machine_);
      EXPECT_TRUE(carol.ok()) << carol.status();
      if (!carol.ok()) return WakeReason::kSignal;
      EXPECT_THAT(*carol, ElementsAre(2, 3));
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {1}, false, machine_).ok());
    } else if (poll == 2) {
      EXPECT_EQ(last_.held, 1) << "bob holds GPU 1";
      auto dave = ReserveGpus(store_, gpus_, Caller{1003, "dave"}, {.ids = {1}}, machine_);
      EXPECT_TRUE(absl::IsResourceExhausted(dave.status())) << dave.status();
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {0}, false, machine_).ok());
    } else {
      ADD_FAILURE() << "served once alice freed GPUs 0 and 1";
      return WakeReason::kSignal;
    }
    return WakeReason::kChanged;
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0, 1));
}

// Free GPUs that an earlier count waiter can use are its, even before it
// takes them; a newcomer takes only what is left over, and a waiter ahead
// that leaves gives its share to those behind it.
TEST_F(QueueTest, LaterWaiterLeavesFreeGpusToAnEarlierCountWaiter) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.ids = {0, 3}}, machine_).ok());
  Enqueue({.uid = 1002, .user = "carol", .count = 1, .ids = {0}}, 701);    // head: busy GPU 0
  int64_t dave = Enqueue({.uid = 1003, .user = "dave", .count = 3}, 702);  // can use 1, 2
  auto eve = ReserveGpus(store_, gpus_, Caller{1004, "eve"}, {.count = 1}, machine_);
  EXPECT_TRUE(absl::IsResourceExhausted(eve.status())) << eve.status();
  EXPECT_THAT(std::string(eve.status().message()), HasSubstr("are theirs"));
  int poll = 0;
  auto ids = BobWaitsWith(1, [&] {
    ++poll;
    if (poll == 1) {
      EXPECT_EQ(last_.position, 3);
      EXPECT_EQ(last_.held, 0) << "GPUs 1 and 2 are dave's: he can use them";
      EXPECT_THAT(last_.blockers, ElementsAre("alice (0,3)", "dave (queued ahead) (1,2)"));
      Dequeue(dave);  // dave gives up
    } else if (poll > 1) {
      ADD_FAILURE() << "served once dave left: carol ahead cannot use GPUs 1 and 2";
      return WakeReason::kSignal;
    }
    return WakeReason::kTimeout;
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 1u);
  EXPECT_TRUE(ids->at(0) == 1 || ids->at(0) == 2) << ids->at(0);
  EXPECT_EQ(Queue().size(), 1u) << "carol still waits for GPU 0";
}

// An earlier waiter whose selector matches a freed GPU gets it first; a later
// count waiter, who could use any GPU, takes the next one that frees.
TEST_F(QueueTest, EarlierSelectorWaiterGetsAMatchingGpuBeforeALaterCountWaiter) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 4}, machine_).ok());
  Enqueue({.uid = 1002,
           .user = "carol",
           .count = 1,
           .selector = "--product a100",
           .eligible = std::vector<int>{1}},
          701);
  int poll = 0;
  auto ids = BobWaitsWith(1, [&] {
    ++poll;
    if (poll == 1) {
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {1}, false, machine_).ok());
    } else if (poll == 2) {
      EXPECT_EQ(last_.held, 0) << "GPU 1 is carol's";
      EXPECT_THAT(last_.blockers, ElementsAre("alice (0,2,3)", "carol (queued ahead) (1)"));
      EXPECT_TRUE(ReleaseGpus(store_, alice_, {2}, false, machine_).ok());
    } else {
      ADD_FAILURE() << "served once GPU 2 was freed";
      return WakeReason::kSignal;
    }
    return WakeReason::kTimeout;
  });
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(2));
  ASSERT_EQ(Queue().size(), 1u);
  EXPECT_EQ(Queue()[0].entry.user, "carol");
}

// With partial holds on 8 GPUs: the head (-G 7) holds the 4 free ones and
// takes each GPU that frees, even one a later waiter asks for by id (the
// earliest wins); needing fewer than are free, it leaves the one the later
// waiter asks for.
TEST_F(QueueTest, HeadForManyTakesFreedGpusFirstButSparesALaterWaitersId) {
  store::MemoryStateStore store;
  ASSERT_TRUE(InitializePool(store, {8, "fake", ""}, false, machine_).ok());
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(GpuInfo{.index = i});
  ASSERT_TRUE(ReserveGpus(store, gpus, alice_, {.ids = {0, 1, 2, 3}}, machine_).ok());
  int poll = 0;
  WaitOptions options{
      .waiter = {700, 9},
      .query_gpus = [&]() -> absl::StatusOr<std::vector<GpuInfo>> { return gpus; },
      .sleep =
          [&](Duration) {
            ++poll;
            if (poll == 1) {
              EXPECT_EQ(last_.held, 4);
              Enqueue({.uid = 1002, .user = "carol", .count = 2, .ids = {0, 1}}, 701, &store);
              EXPECT_TRUE(ReleaseGpus(store, alice_, {0}, false, machine_).ok());
            } else if (poll == 2) {
              EXPECT_EQ(last_.held, 5) << "bob came first: GPU 0 is his";
              clock_.Advance(std::chrono::seconds(1));
              EXPECT_TRUE(ReleaseGpus(store, alice_, {1, 2, 3}, false, machine_).ok());
            } else {
              ADD_FAILURE() << "served once three more GPUs freed";
              return WakeReason::kSignal;
            }
            return WakeReason::kChanged;
          },
      .on_progress = [&](const WaitProgress& p) { last_ = p; }};
  auto ids = AcquireGpus(store, bob_, {.count = 7}, machine_, options);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(*ids, ElementsAre(0, 2, 3, 4, 5, 6, 7)) << "GPU 1 left to carol";
  auto dave = ReserveGpus(store, gpus, Caller{1003, "dave"}, {.count = 1}, machine_);
  EXPECT_TRUE(absl::IsResourceExhausted(dave.status())) << "GPU 1 is carol's";
}

TEST_F(QueueTest, ImpossibleRequestNeverQueues) {
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 4}, machine_).ok());
  auto ids = BobWaits(5, 100, [] { ADD_FAILURE() << "must not wait"; });
  EXPECT_TRUE(absl::IsInvalidArgument(ids.status())) << ids.status();
  EXPECT_TRUE(Queue().empty());
}

}  // namespace
}  // namespace canhazgpu::alloc
