#include "alloc/reservations.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "alloc/queue.h"
#include "alloc/report.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/memory_state_store.h"

namespace canhazgpu::alloc {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ReservationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InitializePool(store_, {4, "fake", ""}, false, machine_).ok());
    for (int i = 0; i < 4; ++i) {
      GpuInfo g;
      g.index = i;
      g.memory_total_bytes = 80000 * kMiB;
      gpus_.push_back(g);
    }
    table_.Add({.pid = 500, .uid = 1000, .start_ticks = 77, .argv = {"sleep", "100"}});
  }

  absl::StatusOr<std::vector<int>> Reserve(const Caller& who, ReserveRequest request) {
    return ReserveGpus(store_, gpus_, who, request, machine_);
  }
  std::vector<GpuStatus> Status() {
    return CollectStatus(store_, gpus_, 1024 * kMiB, machine_)->gpus;
  }

  store::MemoryStateStore store_;
  host::FakeClock clock_;
  host::FakeProcessTable table_;
  Machine machine_{clock_, table_};
  std::vector<GpuInfo> gpus_;
  Caller alice_{1000, "alice"}, bob_{1001, "bob"}, root_{0, "root"};
};

TEST_F(ReservationsTest, UninitializedPoolSaysRunAdmin) {
  store::MemoryStateStore empty;
  auto r = ReserveGpus(empty, gpus_, alice_, {}, machine_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("run 'canhazgpu admin'"));
}

TEST_F(ReservationsTest, AdminRefusesReinitWithoutForceAndResetsWithIt) {
  ASSERT_TRUE(Reserve(alice_, {.count = 2, .duration = hours(1)}).ok());
  EXPECT_EQ(InitializePool(store_, {8, "fake", ""}, false, machine_).code(),
            absl::StatusCode::kFailedPrecondition);
  int released = 0;
  ASSERT_TRUE(InitializePool(store_, {8, "fake", ""}, true, machine_, &released).ok());
  EXPECT_EQ(released, 2);
  EXPECT_EQ(ReadPool(store_)->gpu_count, 8);
}

TEST_F(ReservationsTest, Issue14PoolSizeIsBounded) {
  // admin --gpus 2147483647 was accepted and then every command looped.
  absl::Status big = InitializePool(store_, {kMaxGpus + 1, "fake", ""}, true, machine_);
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.message(), HasSubstr("a pool of 1025 GPUs: must be from 1 to 1024"));
  EXPECT_EQ(InitializePool(store_, {0, "fake", ""}, true, machine_).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(InitializePool(store_, {kMaxGpus, "fake", ""}, true, machine_).ok());
}

TEST_F(ReservationsTest, Issue14ReportPeriodIsBounded) {
  // report --days 1000000 put the start after the end.
  absl::StatusOr<UsageReport> report = CollectReport(store_, 1000000, clock_.Now());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(report.status().message(), HasSubstr("must be from 1 to 3650"));
  EXPECT_TRUE(CollectReport(store_, kMaxReportDays, clock_.Now()).ok());
}

TEST_F(ReservationsTest, ManualReservationExpiresAndIsReaped) {
  ASSERT_THAT(Reserve(alice_, {.count = 4, .duration = minutes(30)}).value(),
              ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(Reserve(bob_, {.count = 1}).status().code(), absl::StatusCode::kResourceExhausted);
  clock_.Advance(minutes(30));
  ASSERT_THAT(Reserve(bob_, {.count = 1, .duration = minutes(5)}).value(), ElementsAre(0));
  auto status = Status();
  EXPECT_EQ(status[0].reservation->user, "bob");
  EXPECT_EQ(status[1].state, GpuState::kAvailable);
  EXPECT_EQ(status[1].last_released, clock_.Now());
}

TEST_F(ReservationsTest, RunReservationLivesExactlyAsLongAsItsProcess) {
  ProcessRef job{500, 77};
  ASSERT_TRUE(Reserve(alice_, {.count = 1, .kind = ReservationKind::kRun, .process = job}).ok());
  EXPECT_EQ(Status()[0].state, GpuState::kInUse);
  // Same pid, different start time: the pid was reused by another process.
  table_.Add({.pid = 500, .uid = 1000, .start_ticks = 78});
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

TEST_F(ReservationsTest, ZombieJobIsReaped) {
  ProcessRef job{500, 77};
  ASSERT_TRUE(Reserve(alice_, {.count = 1, .kind = ReservationKind::kRun, .process = job}).ok());
  table_.Add({.pid = 500, .uid = 1000, .start_ticks = 77, .state = 'Z'});
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

// Issue 14: the job left its process group (setsid) and the wrapper was
// SIGKILLed. The daemon the wrapper recorded keeps the GPU reserved while it
// runs; a reused pid (another start time) does not.
TEST_F(ReservationsTest, RecordedProcessOutsideTheGroupKeepsTheJobAlive) {
  ProcessRef job{500, 77}, wrapper{499, 76};
  ASSERT_TRUE(
      Reserve(alice_,
              {.count = 1, .kind = ReservationKind::kRun, .process = job, .wrapper = wrapper})
          .ok());
  table_.Add({.pid = 499, .uid = 1000, .start_ticks = 76, .state = 'S'});
  table_.Add({.pid = 600, .ppid = 499, .pgid = 600, .uid = 1000, .start_ticks = 90});
  ASSERT_TRUE(RecordJobProcesses(store_, job, {{600, 90}}, machine_).ok());
  table_.Remove(499);  // SIGKILL: the daemon is re-parented to init
  table_.Remove(500);
  table_.Add({.pid = 600, .ppid = 1, .pgid = 600, .uid = 1000, .start_ticks = 90});
  EXPECT_EQ(Status()[0].state, GpuState::kInUse);
  EXPECT_EQ(Reserve(bob_, {.ids = {0}, .duration = hours(1)}).status().code(),
            absl::StatusCode::kResourceExhausted);
  table_.Add({.pid = 600, .ppid = 1, .pgid = 600, .uid = 1001, .start_ticks = 95});
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable) << "pid 600 now names another process";
}

// Issue 14: the job runs in a cgroup of its own. Its daemon escaped before
// the wrapper could record it, and the wrapper was SIGKILLed: the cgroup
// still holds the daemon, so the GPU stays reserved until it is empty.
TEST_F(ReservationsTest, PopulatedCgroupKeepsTheJobAlive) {
  ProcessRef job{500, 77}, wrapper{499, 76};
  const std::string cgroup = "/sys/fs/cgroup/canhazgpu-job-500-77";
  ASSERT_TRUE(Reserve(alice_, {.count = 1,
                               .kind = ReservationKind::kRun,
                               .process = job,
                               .wrapper = wrapper,
                               .job_cgroup = cgroup})
                  .ok());
  table_.Remove(500);
  table_.SetCgroup(cgroup, true);
  EXPECT_EQ(Status()[0].state, GpuState::kInUse) << "neither the job nor its wrapper runs";
  table_.SetCgroup(cgroup, false);
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

// A cgroup not named after the job (a damaged or doctored state file) is not
// read: it cannot keep the GPU; nor can a cgroup that cannot be read.
TEST_F(ReservationsTest, CgroupOfAnotherJobOrUnreadableDoesNotKeepTheJobAlive) {
  ProcessRef job{500, 77};
  table_.Remove(500);
  for (const char* cgroup : {"/sys/fs/cgroup", "/sys/fs/cgroup/canhazgpu-job-500-78",
                             "/sys/fs/cgroup/canhazgpu-job-500-77"}) {
    ASSERT_TRUE(
        Reserve(alice_,
                {.count = 1, .kind = ReservationKind::kRun, .process = job, .job_cgroup = cgroup})
            .ok());
    if (std::string_view(cgroup) != "/sys/fs/cgroup/canhazgpu-job-500-77") {
      table_.SetCgroup(cgroup, true);
    }
    EXPECT_EQ(Status()[0].state, GpuState::kAvailable) << cgroup;
  }
}

// While the wrapper runs, an orphan of the job (re-parented to the wrapper,
// its subreaper) keeps the job alive even before it was recorded.
TEST_F(ReservationsTest, WrappersChildKeepsTheJobAliveBeforeItIsRecorded) {
  ProcessRef job{500, 77}, wrapper{499, 76};
  ASSERT_TRUE(
      Reserve(alice_,
              {.count = 1, .kind = ReservationKind::kRun, .process = job, .wrapper = wrapper})
          .ok());
  table_.Add({.pid = 499, .uid = 1000, .start_ticks = 76});
  table_.Remove(500);
  table_.Add({.pid = 600, .ppid = 499, .pgid = 600, .uid = 1000, .start_ticks = 90});
  EXPECT_EQ(Status()[0].state, GpuState::kInUse);
  table_.Remove(600);
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

// Issue 14: a SIGSTOPped wrapper cannot reap its job; the exited command is a
// zombie. The job is over, so its GPUs return though the wrapper lives.
TEST_F(ReservationsTest, StoppedWrapperDoesNotHoldAnExitedJob) {
  ProcessRef job{500, 77}, wrapper{499, 76};
  ASSERT_TRUE(
      Reserve(alice_,
              {.count = 1, .kind = ReservationKind::kRun, .process = job, .wrapper = wrapper})
          .ok());
  table_.Add({.pid = 499, .uid = 1000, .start_ticks = 76, .state = 'T'});
  EXPECT_EQ(Status()[0].state, GpuState::kInUse) << "the job still runs";
  table_.Add({.pid = 500, .ppid = 499, .pgid = 500, .start_ticks = 77, .state = 'Z'});
  EXPECT_EQ(Status()[0].state, GpuState::kAvailable);
}

TEST_F(ReservationsTest, ReleaseJobEndsOnlyThatJobsGpus) {
  ProcessRef job{500, 77};
  ASSERT_TRUE(Reserve(alice_, {.count = 2, .kind = ReservationKind::kRun, .process = job}).ok());
  ASSERT_TRUE(Reserve(alice_, {.count = 1, .duration = hours(1)}).ok());
  ASSERT_TRUE(ReleaseJob(store_, job, machine_).ok());
  auto status = Status();
  EXPECT_EQ(status[0].state, GpuState::kAvailable);
  EXPECT_EQ(status[1].state, GpuState::kAvailable);
  EXPECT_EQ(status[2].state, GpuState::kInUse);
}

TEST_F(ReservationsTest, PlainReleaseTakesOnlyOwnManualReservations) {
  ProcessRef job{500, 77};
  ASSERT_TRUE(Reserve(alice_, {.ids = {0}, .kind = ReservationKind::kRun, .process = job}).ok());
  ASSERT_TRUE(Reserve(alice_, {.ids = {1}, .duration = hours(1)}).ok());
  ASSERT_TRUE(Reserve(bob_, {.ids = {2}, .duration = hours(1)}).ok());
  EXPECT_THAT(ReleaseGpus(store_, alice_, {}, false, machine_).value(), ElementsAre(1));
  EXPECT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).value().empty());
  EXPECT_THAT(ReleaseGpus(store_, alice_, {0}, false, machine_).value(), ElementsAre(0));
}

TEST_F(ReservationsTest, OthersReservationsAreRefusedNamingTheOwner) {
  ASSERT_TRUE(Reserve(bob_, {.ids = {2}, .duration = hours(1)}).ok());
  ASSERT_TRUE(Reserve(alice_, {.ids = {3}, .duration = hours(1)}).ok());
  auto refused = ReleaseGpus(store_, alice_, {3, 2}, false, machine_);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("gpu 2 is reserved by bob"));
  EXPECT_EQ(Status()[3].state, GpuState::kInUse) << "all or nothing";
  EXPECT_FALSE(ReleaseGpus(store_, root_, {2}, false, machine_).ok()) << "root needs --force";
  EXPECT_THAT(ReleaseGpus(store_, root_, {2}, true, machine_).value(), ElementsAre(2));
  EXPECT_EQ(ReleaseGpus(store_, alice_, {1}, false, machine_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReleaseGpus(store_, alice_, {9}, false, machine_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ReservationsTest, ReservesWhatTheUserReleasedMostRecently) {
  ASSERT_TRUE(Reserve(bob_, {.ids = {0, 1}, .duration = hours(1)}).ok());
  clock_.Advance(minutes(1));
  ASSERT_TRUE(Reserve(alice_, {.ids = {2}, .duration = hours(1)}).ok());
  ASSERT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine_).ok());
  clock_.Advance(minutes(1));
  ASSERT_TRUE(ReleaseGpus(store_, bob_, {}, false, machine_).ok());
  // Alice gets GPU 2 back; bob, who used 0 and 1, gets one of those.
  EXPECT_THAT(Reserve(alice_, {.count = 1, .duration = hours(1)}).value(), ElementsAre(2));
  EXPECT_THAT(Reserve(bob_, {.count = 1, .duration = hours(1)}).value(), ElementsAre(0));
  // A newcomer gets the never-used GPU 3 first.
  Caller carol{1002, "carol"};
  EXPECT_THAT(Reserve(carol, {.count = 1, .duration = hours(1)}).value(), ElementsAre(3));
}

// A clock that moves a millisecond every time it is read.
class TickingClock : public host::FakeClock {
 public:
  TimePoint Now() const override { return FakeClock::Now() + std::chrono::milliseconds(++reads_); }

 private:
  mutable int reads_ = 0;
};

// GPUs released in one command end at one time, so the next request sees
// them as equals (lowest id first) however long the transaction took.
TEST_F(ReservationsTest, GpusReleasedTogetherEndTogether) {
  TickingClock ticking;
  Machine machine{ticking, table_};
  ASSERT_TRUE(ReserveGpus(store_, gpus_, alice_, {.count = 3, .duration = hours(1)}, machine).ok());
  ASSERT_TRUE(ReleaseGpus(store_, alice_, {}, false, machine).ok());
  EXPECT_THAT(
      ReserveGpus(store_, gpus_, alice_, {.count = 2, .duration = hours(1)}, machine).value(),
      ElementsAre(0, 1));
}

TEST_F(ReservationsTest, UnreservedBusyGpuNeedsForce) {
  gpus_[1].memory_used_bytes = 4096 * kMiB;
  gpus_[1].processes = {{500, 4096 * kMiB}};
  auto busy = Reserve(alice_, {.ids = {1}, .duration = hours(1)});
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(busy.status().message()),
              HasSubstr("in use without reservation (4096 MiB by"));
  EXPECT_THAT(Reserve(alice_, {.ids = {1}, .force = true, .duration = hours(1)}).value(),
              ElementsAre(1));
}

// Issue 14: --force overrides only unreserved use by the caller's own
// processes; root may override anyone's, and the reservation says whose.
TEST_F(ReservationsTest, ForceOverridesOnlyTheCallersOwnProcesses) {
  gpus_[1].memory_used_bytes = 4096 * kMiB;
  gpus_[1].processes = {{500, 4096 * kMiB}};  // alice's
  table_.AddUser(1000, "alice");
  auto refused = Reserve(bob_, {.ids = {1}, .force = true, .duration = hours(1)});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("your own processes"));
  ASSERT_THAT(Reserve(root_, {.ids = {1}, .force = true, .duration = hours(1)}).value(),
              ElementsAre(1));
  EXPECT_EQ(Status()[1].reservation->forced_over, "alice");
}

// A store whose writes fail, as a read-only file or a full disk makes them.
class UnwritableStore : public store::StateStore {
 public:
  explicit UnwritableStore(store::StateStore& inner) : inner_(inner) {}
  absl::Status Update(const store::TransactionFn&) override {
    return absl::PermissionDeniedError("cannot write state file s.db: read-only");
  }
  absl::Status Read(const store::TransactionFn& fn) override { return inner_.Read(fn); }

 private:
  store::StateStore& inner_;
};

TEST_F(ReservationsTest, StatusOfAnUnwritableStoreIsReadOnlyAndLeavesOutWhatIsStale) {
  ASSERT_TRUE(Reserve(alice_, {.ids = {0}, .duration = hours(1)}).ok());
  ASSERT_TRUE(Reserve(bob_, {.ids = {1}, .duration = hours(3)}).ok());
  clock_.Advance(hours(2));
  UnwritableStore unwritable(store_);
  absl::StatusOr<HostStatus> status = CollectStatus(unwritable, gpus_, 1024 * kMiB, machine_);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_THAT(status->write_error, HasSubstr("read-only"));
  EXPECT_EQ(status->gpus[0].state, GpuState::kAvailable) << "expired: shown as ended";
  EXPECT_EQ(status->gpus[1].state, GpuState::kInUse);
  // Nothing was written: the writable store still holds and then reaps it.
  absl::StatusOr<HostStatus> written = CollectStatus(store_, gpus_, 1024 * kMiB, machine_);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->write_error, "");
  EXPECT_EQ(written->gpus[0].last_released, clock_.Now()) << "reaped only now";
}

TEST_F(ReservationsTest, QueueOfAnUnwritableStoreLeavesOutDeadWaiters) {
  ASSERT_TRUE(store_
                  .Update([](store::StateTransaction& t) {
                    QueueEntry dead{.uid = 1000, .user = "alice", .count = 1};
                    dead.waiter = {999, 1};  // not in the process table
                    return t.InsertQueueEntry(dead).status();
                  })
                  .ok());
  UnwritableStore unwritable(store_);
  std::string write_error;
  absl::StatusOr<std::vector<QueueRow>> rows = CollectQueue(unwritable, machine_, &write_error);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->empty());
  EXPECT_THAT(write_error, HasSubstr("read-only"));
}

TEST_F(ReservationsTest, UnwritableStoreStillReportsAnUninitializedPool) {
  store::MemoryStateStore empty;
  UnwritableStore unwritable(empty);
  absl::StatusOr<HostStatus> status = CollectStatus(unwritable, gpus_, 1024 * kMiB, machine_);
  EXPECT_EQ(status.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace canhazgpu::alloc
