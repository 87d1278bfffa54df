// Reservations for Kubernetes claims: what k8shazgpu-node's prepare and
// unprepare do to the host store.
#include "store/claim_reservations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <thread>

#include "core/status_macros.h"
#include "store/memory_state_store.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::store {
namespace {

using ::testing::HasSubstr;

const KubeClaimRef kTrain{
    .namespace_name = "ml", .name = "train", .uid = "uid-train", .pod = "train-0"};
const KubeClaimRef kEval{.namespace_name = "ml", .name = "eval", .uid = "uid-eval"};

TimePoint At(int64_t minute) { return FromEpochMillis(minute * 60'000); }

class ClaimReservationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.Update([](StateTransaction& t) { return t.SetPool({4, "fake", ""}); }).ok());
  }

  void Insert(const Reservation& r) {
    ASSERT_TRUE(store_.Update([&](StateTransaction& t) { return t.InsertReservation(r); }).ok());
  }

  std::vector<Reservation> All() {
    std::vector<Reservation> out;
    EXPECT_TRUE(store_
                    .Read([&](StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(out, t.ListReservations());
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  std::vector<HistoryRecord> History() {
    std::vector<HistoryRecord> out;
    EXPECT_TRUE(store_
                    .Read([&](StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(out, t.HistorySince(FromEpochMillis(0)));
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  MemoryStateStore store_;
};

constexpr uint64_t kClaimGiB = uint64_t{1} << 30;
constexpr uint64_t kClaimShareable = 79 * kClaimGiB;

ClaimGpu ShareOf(int gpu, uint64_t gib, const std::string& id) {
  return {.gpu = gpu, .memory = gib * kClaimGiB, .share = id, .shareable = kClaimShareable};
}

TEST_F(ClaimReservationsTest, SharesOfClaimsAndLocalUsersFitTogetherOrAreRefusedNamingTheHolders) {
  Insert(Reservation{.gpu = 1,
                     .memory = 40 * kClaimGiB,
                     .share = "local",
                     .shareable = kClaimShareable,
                     .uid = 1000,
                     .user = "alice",
                     .kind = ReservationKind::kManual,
                     .start = At(1)});
  ASSERT_TRUE(ReserveClaimGpus(store_, {ShareOf(1, 30, "s-train")}, kTrain, "", 0, At(2)).ok());
  // Again (a retried prepare): kept as it is.
  ASSERT_TRUE(ReserveClaimGpus(store_, {ShareOf(1, 30, "s-train")}, kTrain, "", 0, At(3)).ok());
  ASSERT_EQ(All().size(), 2u);
  absl::Status over = ReserveClaimGpus(store_, {ShareOf(1, 10, "s-eval")}, kEval, "", 0, At(4));
  EXPECT_EQ(over.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(over.message(), HasSubstr("a share of 10Gi does not fit, only 9Gi of 79Gi left"));
  EXPECT_THAT(over.message(), HasSubstr("reserved by alice (manual)"));
  EXPECT_THAT(over.message(), HasSubstr("claim ml/train"));
  absl::Status whole = ReserveForClaim(store_, {1}, kEval, "", 0, At(4));
  EXPECT_THAT(whole.message(), HasSubstr("a share of 40Gi"));
  EXPECT_THAT(whole.message(), HasSubstr("a share of 30Gi"));
  ASSERT_TRUE(ReserveClaimGpus(store_, {ShareOf(1, 9, "s-eval")}, kEval, "", 0, At(4)).ok());
  // A share of a GPU held whole is refused too.
  ASSERT_TRUE(ReserveForClaim(store_, {2}, kTrain, "", 0, At(5)).ok());
  EXPECT_FALSE(ReserveClaimGpus(store_, {ShareOf(2, 1, "s-x")}, kEval, "", 0, At(5)).ok());
  // Releasing a claim ends its share and whole GPU, nobody else's.
  ASSERT_TRUE(ReleaseClaim(store_, kTrain.uid, At(6)).ok());
  std::vector<Reservation> left = All();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].share == "local" ? left[1].share : left[0].share, "s-eval");
}

TEST_F(ClaimReservationsTest, ALostShareIsRestoredWhereItStillFits) {
  ASSERT_TRUE(
      ReserveClaimGpus(store_, {ShareOf(0, 30, "s-a"), ShareOf(0, 20, "s-b")}, kTrain, "", 0, At(1))
          .ok());
  ASSERT_TRUE(ReleaseClaim(store_, kTrain.uid, At(2)).ok());
  absl::StatusOr<ClaimRestore> restored =
      RestoreClaimGpus(store_, {ShareOf(0, 30, "s-a"), ShareOf(0, 20, "s-b")}, kTrain, "", At(3));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->restored, (std::vector<int>{0, 0}));
  EXPECT_TRUE(restored->conflicts.empty());
  EXPECT_EQ(All().size(), 2u);
  // The same share twice in one request is bad input.
  EXPECT_EQ(ReserveClaimGpus(store_, {ShareOf(3, 1, "s"), ShareOf(3, 1, "s")}, kEval, "", 0, At(4))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ClaimReservationsTest, ReservesEveryGpuAsK8sForTheClaim) {
  ASSERT_TRUE(ReserveForClaim(store_, {2, 0}, kTrain, "alice", 1000, At(5)).ok());
  std::vector<Reservation> all = All();
  ASSERT_EQ(all.size(), 2u);
  for (const Reservation& r : all) {
    EXPECT_EQ(r.kind, ReservationKind::kK8s);
    EXPECT_EQ(r.claim, kTrain);
    EXPECT_EQ(r.user, "alice");
    EXPECT_EQ(r.uid, 1000u);
    EXPECT_EQ(r.start, At(5));
    EXPECT_FALSE(r.expires.has_value()) << "a k8s reservation never expires";
    EXPECT_FALSE(r.process.has_value());
  }
  EXPECT_EQ(all[0].gpu, 0);
  EXPECT_EQ(all[1].gpu, 2);
}

TEST_F(ClaimReservationsTest, UnknownUserIsRecordedAsTheNamespace) {
  ASSERT_TRUE(ReserveForClaim(store_, {1}, kEval, "", 0, At(0)).ok());
  ASSERT_EQ(All().size(), 1u);
  EXPECT_EQ(All()[0].user, "k8s:ml");
  EXPECT_EQ(All()[0].uid, 0u);
}

// The kubelet repeats a prepare after a driver restart: same claim, same
// GPUs, nothing changes (not even the start).
TEST_F(ClaimReservationsTest, RepeatedReserveForTheSameClaimIsIdempotent) {
  ASSERT_TRUE(ReserveForClaim(store_, {0, 1}, kTrain, "alice", 1000, At(5)).ok());
  ASSERT_TRUE(ReserveForClaim(store_, {0, 1}, kTrain, "alice", 1000, At(9)).ok());
  std::vector<Reservation> all = All();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].start, At(5));
  EXPECT_EQ(all[1].start, At(5));
  // A prepare that also names a free GPU takes it, keeping the others.
  ASSERT_TRUE(ReserveForClaim(store_, {0, 1, 3}, kTrain, "alice", 1000, At(10)).ok());
  all = All();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].start, At(5));
  EXPECT_EQ(all[2].start, At(10));
  EXPECT_TRUE(History().empty());
}

TEST_F(ClaimReservationsTest, GpuOfALocalUserFailsTheWholeClaimNamingTheHolder) {
  Insert({.gpu = 1,
          .uid = 1001,
          .user = "bob",
          .kind = ReservationKind::kManual,
          .start = At(62),
          .expires = At(600)});
  absl::Status s = ReserveForClaim(store_, {0, 1}, kTrain, "alice", 1000, At(70));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("gpu 1: reserved by bob (manual) since 1970-01-01T01:02:00Z"));
  EXPECT_THAT(s.message(), HasSubstr("claim ml/train (pod train-0)"));
  EXPECT_EQ(s.message().find('\n'), std::string_view::npos) << "one line";
  ASSERT_EQ(All().size(), 1u) << "all or nothing: gpu 0 stays free";
  EXPECT_EQ(All()[0].user, "bob");
}

// Issue 29 item 4: what the driver puts back for a claim the store lost
// (admin --force, a new state file): each free GPU, whoever holds the others.
TEST_F(ClaimReservationsTest, RestoreClaimTakesBackEachFreeGpuAndNamesTheRest) {
  ASSERT_TRUE(ReserveForClaim(store_, {0}, kTrain, "alice", 1000, At(1)).ok());
  Insert({.gpu = 2,
          .uid = 1001,
          .user = "bob",
          .kind = ReservationKind::kManual,
          .start = At(62),
          .expires = At(600)});
  absl::StatusOr<ClaimRestore> restored =
      RestoreClaim(store_, {0, 1, 2, 7}, kTrain, "alice", At(70));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->restored, std::vector<int>{1});  // gpu 0 it still held
  ASSERT_EQ(restored->conflicts.size(), 2u);
  EXPECT_EQ(restored->conflicts[0], "gpu 2: reserved by bob (manual) since 1970-01-01T01:02:00Z");
  EXPECT_EQ(restored->conflicts[1], "gpu 7: not in this host's pool of 4 GPUs");
  std::vector<Reservation> all = All();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].gpu, 1);
  EXPECT_EQ(all[1].kind, ReservationKind::kK8s);
  EXPECT_EQ(all[1].user, "alice");
  EXPECT_EQ(all[1].claim, kTrain);
  EXPECT_EQ(all[2].user, "bob");

  // Again: nothing more to do.
  restored = RestoreClaim(store_, {0, 1}, kTrain, "alice", At(71));
  EXPECT_TRUE(restored->restored.empty());
  EXPECT_TRUE(restored->conflicts.empty());
  MemoryStateStore empty;
  EXPECT_EQ(RestoreClaim(empty, {0}, kTrain, "", At(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClaimReservationsTest, GpusOfRunJobsAnotherClaimOrTheQueueAreAllNamed) {
  Insert({.gpu = 0,
          .uid = 1001,
          .user = "bob",
          .kind = ReservationKind::kRun,
          .start = At(1),
          .process = ProcessRef{4242, 1}});
  Insert({.gpu = 2, .uid = 1002, .user = "carol", .start = At(1), .queue_id = 7});
  ASSERT_TRUE(ReserveForClaim(store_, {3}, kEval, "", 0, At(2)).ok());
  absl::Status s = ReserveForClaim(store_, {0, 1, 2, 3}, kTrain, "alice", 1000, At(3));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("gpu 0: reserved by bob (run, pid 4242)"));
  EXPECT_THAT(s.message(), HasSubstr("gpu 2: held for a request of carol waiting in the queue"));
  EXPECT_THAT(s.message(), HasSubstr("gpu 3: reserved for Kubernetes claim ml/eval since"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("gpu 1")));
  EXPECT_EQ(All().size(), 3u);
}

// What status shows as free is free: a manual reservation whose time is up
// ends (history: expired) and the claim gets the GPU.
TEST_F(ClaimReservationsTest, ExpiredManualReservationIsEndedAndTaken) {
  Insert({.gpu = 1, .uid = 1001, .user = "bob", .start = At(0), .expires = At(60)});
  ASSERT_TRUE(ReserveForClaim(store_, {1}, kTrain, "alice", 1000, At(60)).ok());
  ASSERT_EQ(All().size(), 1u);
  EXPECT_EQ(All()[0].kind, ReservationKind::kK8s);
  std::vector<HistoryRecord> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].user, "bob");
  EXPECT_EQ(history[0].reason, ReleaseReason::kExpired);
}

TEST_F(ClaimReservationsTest, RefusesBadRequests) {
  EXPECT_EQ(ReserveForClaim(store_, {}, kTrain, "", 0, At(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReserveForClaim(store_, {1, 1}, kTrain, "", 0, At(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReserveForClaim(store_, {-1}, kTrain, "", 0, At(0)).code(),
            absl::StatusCode::kInvalidArgument);
  KubeClaimRef no_uid = kTrain;
  no_uid.uid = "";
  EXPECT_EQ(ReserveForClaim(store_, {1}, no_uid, "", 0, At(0)).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status outside = ReserveForClaim(store_, {1, 4}, kTrain, "", 0, At(0));
  EXPECT_EQ(outside.code(), absl::StatusCode::kNotFound) << outside;
  EXPECT_THAT(outside.message(), HasSubstr("gpu 4: not in this host's pool of 4 GPUs"));
  EXPECT_TRUE(All().empty());
  MemoryStateStore no_pool;
  EXPECT_EQ(ReserveForClaim(no_pool, {0}, kTrain, "", 0, At(0)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClaimReservationsTest, ReleaseClaimEndsOnlyThatClaimsGpusIntoTheHistory) {
  ASSERT_TRUE(ReserveForClaim(store_, {0, 2}, kTrain, "alice", 1000, At(1)).ok());
  ASSERT_TRUE(ReserveForClaim(store_, {1}, kEval, "", 0, At(1)).ok());
  Insert({.gpu = 3, .uid = 1000, .user = "alice", .start = At(1)});
  ASSERT_TRUE(ReleaseClaim(store_, "uid-train", At(30)).ok());
  std::vector<Reservation> left = All();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].claim, kEval);
  EXPECT_EQ(left[1].kind, ReservationKind::kManual);
  std::vector<HistoryRecord> history = History();
  ASSERT_EQ(history.size(), 2u);
  for (const HistoryRecord& h : history) {
    EXPECT_EQ(h.kind, ReservationKind::kK8s);
    EXPECT_EQ(h.reason, ReleaseReason::kReleased);
    EXPECT_EQ(h.start, At(1));
    EXPECT_EQ(h.end, At(30));
    EXPECT_EQ(h.note, "claim ml/train (pod train-0)");
  }
  // Unprepare again, or of a claim never prepared: nothing to do.
  EXPECT_TRUE(ReleaseClaim(store_, "uid-train", At(31)).ok());
  EXPECT_TRUE(ReleaseClaim(store_, "uid-none", At(31)).ok());
  EXPECT_EQ(History().size(), 2u);
  EXPECT_EQ(ReleaseClaim(store_, "", At(31)).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClaimReservationsTest, ListClaimReservationsListsOnlyK8s) {
  Insert({.gpu = 0, .uid = 1000, .user = "alice", .start = At(1)});
  ASSERT_TRUE(ReserveForClaim(store_, {3, 1}, kTrain, "alice", 1000, At(1)).ok());
  absl::StatusOr<std::vector<Reservation>> list = ListClaimReservations(store_);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].gpu, 1);
  EXPECT_EQ((*list)[1].gpu, 3);
  EXPECT_EQ((*list)[1].claim, kTrain);
}

// Two processes' connections (two store objects on one file): a local
// reserve and a prepare for the same GPU, started together, many times.
// Exactly one wins each time, and the file says which.
TEST(ClaimReservationsRaceTest, LocalReserveAndClaimForOneGpuHaveExactlyOneWinner) {
  char tmpl[] = "/tmp/claim_race_test.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/state.db";
  {
    auto store = SqliteStateStore::Open(path, {.create = true});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)
                    ->Update([](StateTransaction& t) {
                      return t.SetPool({1, "fake", ""});
                    })
                    .ok());
  }
  auto local = SqliteStateStore::Open(path);
  auto driver = SqliteStateStore::Open(path);
  ASSERT_TRUE(local.ok() && driver.ok());
  constexpr int kRounds = 200;
  std::atomic<int> local_wins = 0, claim_wins = 0;
  std::barrier sync(2);
  std::thread local_thread([&] {
    for (int i = 0; i < kRounds; ++i) {
      sync.arrive_and_wait();
      // As alloc's reserve does: look, and insert if free, in one transaction.
      absl::Status s = (*local)->Update([&](StateTransaction& t) -> absl::Status {
        ASSIGN_OR_RETURN(std::vector<Reservation> held, t.ListReservations());
        if (!held.empty()) return absl::ResourceExhaustedError("gpu 0 is reserved");
        return t.InsertReservation({.gpu = 0, .uid = 1001, .user = "bob", .start = At(i)});
      });
      if (s.ok()) local_wins++;
      EXPECT_TRUE(s.ok() || absl::IsResourceExhausted(s)) << s;
      sync.arrive_and_wait();
    }
  });
  std::thread driver_thread([&] {
    for (int i = 0; i < kRounds; ++i) {
      sync.arrive_and_wait();
      absl::Status s = ReserveForClaim(**driver, {0}, kTrain, "alice", 1000, At(i));
      if (s.ok()) claim_wins++;
      EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s)) << s;
      sync.arrive_and_wait();
      // Between rounds: check the winner is the one holding the GPU, and free it.
      EXPECT_TRUE((*driver)
                      ->Update([&](StateTransaction& t) -> absl::Status {
                        ASSIGN_OR_RETURN(std::vector<Reservation> held, t.ListReservations());
                        EXPECT_EQ(held.size(), 1u) << "round " << i;
                        if (held.size() != 1) return absl::OkStatus();
                        EXPECT_EQ(held[0].kind == ReservationKind::kK8s, s.ok()) << "round " << i;
                        return t.DeleteReservation(0);
                      })
                      .ok());
    }
  });
  local_thread.join();
  driver_thread.join();
  EXPECT_EQ(local_wins + claim_wins, kRounds) << "exactly one winner per round";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::store
