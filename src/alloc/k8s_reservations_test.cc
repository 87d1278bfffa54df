// GPUs prepared for Kubernetes claims (kind k8s, store/claim_reservations.h)
// in the local lifecycle: never stale, not the local users' to release or
// take (not even root's with --force), ended by an admin reset, counted in
// reports; and a local reserve racing a prepare has exactly one winner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <thread>

#include "alloc/report.h"
#include "alloc/reservations.h"
#include "core/status_macros.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/claim_reservations.h"
#include "store/memory_state_store.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::alloc {
namespace {

using std::chrono::hours;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const KubeClaimRef kTrain{
    .namespace_name = "ml", .name = "train", .uid = "uid-train", .pod = "train-0"};

class K8sReservationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InitializePool(store_, {4, "fake", ""}, false, machine_).ok());
    for (int i = 0; i < 4; ++i) {
      GpuInfo g;
      g.index = i;
      g.memory_total_bytes = 80000 * kMiB;
      gpus_.push_back(g);
    }
    // Alice's pod holds GPU 1 (the pod's processes are not visible here).
    ASSERT_TRUE(
        store::ReserveForClaim(store_, {1}, kTrain, "alice", alice_.uid, clock_.Now()).ok());
    gpus_[1].memory_used_bytes = 30000 * kMiB;
    gpus_[1].processes = {{9999, 30000 * kMiB}};
  }

  absl::StatusOr<std::vector<int>> Reserve(const Caller& who, ReserveRequest request) {
    return ReserveGpus(store_, gpus_, who, request, machine_);
  }
  std::vector<GpuStatus> Status() {
    return CollectStatus(store_, gpus_, 1024 * kMiB, machine_)->gpus;
  }
  std::vector<HistoryRecord> History() {
    std::vector<HistoryRecord> out;
    EXPECT_TRUE(store_
                    .Read([&](store::StateTransaction& t) -> absl::Status {
                      ASSIGN_OR_RETURN(out, t.HistorySince(FromEpochMillis(0)));
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  }

  store::MemoryStateStore store_;
  host::FakeClock clock_;
  host::FakeProcessTable table_;
  Machine machine_{clock_, table_};
  std::vector<GpuInfo> gpus_;
  Caller alice_{1000, "alice"}, bob_{1001, "bob"}, root_{0, "root"};
};

// No time limit and no process to watch: a week later, with no process of
// it visible here, it is still reserved, and nothing went to the history.
TEST_F(K8sReservationsTest, NeverExpiresNorIsReapedAsAJob) {
  clock_.Advance(hours(24 * 7));
  std::vector<GpuStatus> status = Status();
  EXPECT_EQ(status[1].state, GpuState::kInUse);
  ASSERT_TRUE(status[1].reservation.has_value());
  EXPECT_EQ(status[1].reservation->kind, ReservationKind::kK8s);
  EXPECT_EQ(status[1].reservation->claim, kTrain);
  EXPECT_TRUE(History().empty());
}

// Not even its own user (same uid) may release it, nor root with --force:
// one line naming the claim and how it ends.
TEST_F(K8sReservationsTest, LocalReleaseIsRefusedNamingTheClaim) {
  for (auto [who, force] : {std::pair{alice_, false}, std::pair{root_, true}}) {
    auto released = ReleaseGpus(store_, who, {1}, force, machine_);
    EXPECT_EQ(released.status().code(), absl::StatusCode::kFailedPrecondition) << who.user;
    EXPECT_EQ(released.status().message(),
              "gpu 1 belongs to Kubernetes claim ml/train (pod train-0); it is released by "
              "deleting the pod or the claim");
  }
  // A plain release takes the caller's manual reservations only.
  ASSERT_TRUE(Reserve(alice_, {.ids = {2}, .duration = hours(1)}).ok());
  EXPECT_THAT(ReleaseGpus(store_, alice_, {}, false, machine_).value(), ElementsAre(2));
  EXPECT_EQ(Status()[1].state, GpuState::kInUse);
}

// Unknown user (uid 0): root's plain release does not take it either.
TEST_F(K8sReservationsTest, UidZeroGrantsRootNothing) {
  ASSERT_TRUE(store::ReserveForClaim(store_, {3},
                                     {.namespace_name = "ml", .name = "x", .uid = "uid-x"}, "", 0,
                                     clock_.Now())
                  .ok());
  EXPECT_TRUE(ReleaseGpus(store_, root_, {}, false, machine_).value().empty());
  EXPECT_EQ(ReleaseGpus(store_, root_, {3}, true, machine_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Status()[3].reservation->user, "k8s:ml");
}

// reserve never takes it, --force and root included (the pod computes on
// it); a count request simply finds it not free.
TEST_F(K8sReservationsTest, ReserveCannotTakeItEvenWithForce) {
  for (const Caller& who : {alice_, bob_, root_}) {
    auto taken = Reserve(who, {.ids = {1}, .force = true, .duration = hours(1)});
    EXPECT_EQ(taken.status().code(), absl::StatusCode::kResourceExhausted) << who.user;
    EXPECT_THAT(std::string(taken.status().message()),
                HasSubstr("reserved for Kubernetes claim ml/train (pod train-0)"));
  }
  EXPECT_EQ(Reserve(root_, {.count = 4, .force = true}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Reserve(bob_, {.count = 3, .duration = hours(1)}).value(), ElementsAre(0, 2, 3));
  EXPECT_EQ(Status()[1].reservation->kind, ReservationKind::kK8s);
}

// Issue 29 item 4: `admin --force` ended the claim's reservation under its
// running pod, and a local user was then handed the pod's GPU. It refuses
// now, naming the GPU and the claim, unless told to drop pods' reservations.
TEST_F(K8sReservationsTest, AdminResetRefusesWhilePodsHoldGpusUnlessToldToDropThem) {
  int released = 0;
  absl::Status refused = InitializePool(store_, {4, "fake", ""}, true, machine_, &released);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("gpu 1 for claim ml/train (pod train-0): prepared for Kubernetes, and the "
                        "pod keeps running on it; --force would hand it to local users as well"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("add --drop-pod-reservations"));
  EXPECT_EQ(released, 0);
  EXPECT_EQ(Status()[1].reservation->kind, ReservationKind::kK8s);

  ASSERT_TRUE(
      InitializePool(store_, {4, "fake", ""}, true, machine_, &released, PodReservations::kDrop)
          .ok());
  EXPECT_EQ(released, 1);
  std::vector<HistoryRecord> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].kind, ReservationKind::kK8s);
  EXPECT_EQ(history[0].reason, ReleaseReason::kAdminReset);
  EXPECT_EQ(Status()[1].state, GpuState::kUnreserved) << "the pod still uses it";
}

// The report counts the claim's GPU time apart from RUN and MANUAL, live
// and ended.
TEST_F(K8sReservationsTest, ReportCountsK8sTimeApart) {
  clock_.Advance(hours(2));
  ASSERT_TRUE(store::ReleaseClaim(store_, kTrain.uid, clock_.Now()).ok());
  ASSERT_TRUE(store::ReserveForClaim(store_, {0}, kTrain, "alice", alice_.uid, clock_.Now()).ok());
  clock_.Advance(hours(1));
  UsageReport report = CollectReport(store_, 1, clock_.Now()).value();
  ASSERT_EQ(report.users.size(), 1u);
  EXPECT_EQ(report.users[0].user, "alice");
  EXPECT_EQ(report.users[0].k8s_ms, 3 * 3'600'000);
  EXPECT_EQ(report.users[0].manual_ms, 0);
  EXPECT_EQ(report.users[0].run_ms, 0);
  EXPECT_EQ(report.total.total_ms(), 3 * 3'600'000);
  std::vector<HistoryRecord> history = History();
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].kind, ReservationKind::kK8s);
  EXPECT_EQ(history[0].reason, ReleaseReason::kReleased);
}

// `canhazgpu reserve` and k8shazgpu-node are two processes: two connections
// to one SQLite file, both going for GPU 0 at once, many times. Exactly one
// wins each round, and the loser's error names the winner.
TEST(K8sReservationRaceTest, LocalReserveAndPrepareOfOneGpuHaveExactlyOneWinner) {
  char tmpl[] = "/tmp/k8s_race_test.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/state.db";
  host::FakeClock clock;
  host::FakeProcessTable table;
  const Machine machine{clock, table};
  {
    auto store = store::SqliteStateStore::Open(path, {.create = true});
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(InitializePool(**store, {2, "fake", ""}, false, machine).ok());
  }
  std::vector<GpuInfo> gpus(2);
  gpus[1].index = 1;
  auto local = store::SqliteStateStore::Open(path);
  auto driver = store::SqliteStateStore::Open(path);
  ASSERT_TRUE(local.ok() && driver.ok());
  constexpr int kRounds = 100;
  std::atomic<int> local_wins = 0, claim_wins = 0;
  std::vector<std::string> local_errors(kRounds), claim_errors(kRounds);
  std::barrier sync(2);
  std::thread local_thread([&] {
    for (int i = 0; i < kRounds; ++i) {
      sync.arrive_and_wait();
      auto got = ReserveGpus(**local, gpus, {1001, "bob"},
                             {.ids = {0}, .force = true, .duration = hours(1)}, machine);
      if (got.ok()) local_wins++;
      local_errors[i] = std::string(got.status().message());
      sync.arrive_and_wait();
      sync.arrive_and_wait();  // the driver thread checks and cleans up
    }
  });
  std::thread driver_thread([&] {
    for (int i = 0; i < kRounds; ++i) {
      sync.arrive_and_wait();
      absl::Status s = store::ReserveForClaim(**driver, {0}, kTrain, "alice", 1000, clock.Now());
      if (s.ok()) claim_wins++;
      claim_errors[i] = std::string(s.message());
      sync.arrive_and_wait();
      EXPECT_TRUE((*driver)
                      ->Update([&](store::StateTransaction& t) -> absl::Status {
                        ASSIGN_OR_RETURN(std::vector<Reservation> held, t.ListReservations());
                        EXPECT_EQ(held.size(), 1u) << "round " << i;
                        if (held.size() != 1) return absl::OkStatus();
                        if (s.ok()) {
                          EXPECT_EQ(held[0].kind, ReservationKind::kK8s) << "round " << i;
                          EXPECT_THAT(local_errors[i], HasSubstr("Kubernetes claim ml/train"));
                        } else {
                          EXPECT_EQ(held[0].user, "bob") << "round " << i;
                          EXPECT_THAT(claim_errors[i],
                                      HasSubstr("gpu 0: reserved by bob (manual)"));
                        }
                        return t.DeleteReservation(0);
                      })
                      .ok());
      sync.arrive_and_wait();
    }
  });
  local_thread.join();
  driver_thread.join();
  EXPECT_EQ(local_wins + claim_wins, kRounds) << "exactly one winner per round";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::alloc
