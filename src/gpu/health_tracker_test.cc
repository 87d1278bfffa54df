#include "gpu/health_tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "host/testing/fake_clock.h"

namespace canhazgpu::gpu {
namespace {

using std::chrono::minutes;
using ::testing::HasSubstr;

class HealthTrackerTest : public ::testing::Test {
 protected:
  HealthTrackerTest() : tracker_(clock_, HealthOptions{}) {
    tracker_.AddGpu(0, 0, "GPU-aaaa");
    tracker_.AddGpu(1, 1, "GPU-bbbb");
  }
  GpuHealth Gpu(int index) const { return tracker_.Snapshot().gpus.at(static_cast<size_t>(index)); }

  host::FakeClock clock_;
  HealthTracker tracker_;
};

TEST_F(HealthTrackerTest, FatalXidIsAProblemOfThatGpuOnly) {
  tracker_.RecordXid(1, 79);
  const GpuHealth gpu = Gpu(1);
  ASSERT_EQ(gpu.problems.size(), 1u);
  const HealthProblem& p = gpu.problems[0];
  EXPECT_EQ(p.kind, HealthProblemKind::kXid);
  EXPECT_EQ(p.severity, HealthSeverity::kFatal);
  EXPECT_EQ(p.xid, 79u);
  EXPECT_EQ(p.since, clock_.Now());
  EXPECT_THAT(p.message, HasSubstr("gpu 1 (GPU-bbbb): XID 79 (fatal)"));
  EXPECT_TRUE(Gpu(1).HasFatalProblem());
  EXPECT_TRUE(Gpu(0).problems.empty());
}

TEST_F(HealthTrackerTest, ApplicationXidsAreInformational) {
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) tracker_.RecordXid(0, xid);
  ASSERT_EQ(Gpu(0).problems.size(), 1u);
  EXPECT_EQ(Gpu(0).problems[0].severity, HealthSeverity::kInformational);
  EXPECT_EQ(Gpu(0).problems[0].xid, 109u);  // the latest
  EXPECT_EQ(Gpu(0).problems[0].xid_count, 6);
  EXPECT_FALSE(Gpu(0).HasFatalProblem());
}

TEST_F(HealthTrackerTest, InformationalXidListIsConfigurable) {
  HealthOptions options;
  options.informational_xids = {79};
  HealthTracker tracker(clock_, options);
  tracker.AddGpu(0, 0, "GPU-aaaa");
  tracker.RecordXid(0, 79);
  tracker.RecordXid(0, 13);
  const GpuHealth gpu = tracker.Snapshot().gpus[0];
  ASSERT_NE(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kInformational), nullptr);
  EXPECT_EQ(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kInformational)->xid, 79u);
  ASSERT_NE(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal), nullptr);
  EXPECT_EQ(gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal)->xid, 13u);
}

TEST_F(HealthTrackerTest, InformationalXidKeepsAnEarlierFatalOne) {
  tracker_.RecordXid(1, 79);
  tracker_.RecordXid(1, 13);
  EXPECT_TRUE(Gpu(1).HasFatalProblem());
  EXPECT_EQ(Gpu(1).problems.size(), 2u);
}

// The quiet period counts from the latest XID: a GPU that keeps failing
// keeps its problem, and `since` does not move while it lasts.
TEST_F(HealthTrackerTest, XidClearsAfterAQuietPeriodFromTheLatestXid) {
  const TimePoint first = clock_.Now();
  tracker_.RecordXid(1, 79);
  clock_.Advance(minutes(9));
  tracker_.RecordXid(1, 48);
  clock_.Advance(minutes(9));
  tracker_.ExpireQuietXids();
  ASSERT_EQ(Gpu(1).problems.size(), 1u);
  EXPECT_EQ(Gpu(1).problems[0].xid, 48u);
  EXPECT_EQ(Gpu(1).problems[0].since, first);
  EXPECT_THAT(Gpu(1).problems[0].message, HasSubstr("2 fatal XIDs since"));
  clock_.Advance(minutes(1));
  tracker_.ExpireQuietXids();
  EXPECT_TRUE(Gpu(1).problems.empty());
}

TEST_F(HealthTrackerTest, LostEccAndUnmonitoredClearWhenToldSo) {
  tracker_.SetLost(0, true, "GPU is lost");
  tracker_.SetEccRetirementPending(0, true);
  tracker_.SetUnmonitored(1, true, "XID events: NVML: Not Supported");
  EXPECT_EQ(Gpu(0).problems.size(), 2u);
  EXPECT_THAT(Gpu(0).problems[0].message, HasSubstr("gpu 0 (GPU-aaaa): lost (GPU is lost)"));
  EXPECT_THAT(Gpu(0).problems[1].message, HasSubstr("ECC page retirement pending"));
  EXPECT_EQ(Gpu(1).problems[0].severity, HealthSeverity::kInformational);
  tracker_.SetLost(0, false);
  tracker_.SetEccRetirementPending(0, false);
  tracker_.SetUnmonitored(1, false);
  EXPECT_TRUE(Gpu(0).problems.empty());
  EXPECT_TRUE(Gpu(1).problems.empty());
}

// Polls repeat themselves every round; republishing follows the version, so
// a repeat must not count as a change, and `since` stays.
TEST_F(HealthTrackerTest, RepeatedObservationsAreNotChanges) {
  tracker_.SetLost(0, true);
  const HealthSnapshot before = tracker_.Snapshot();
  clock_.Advance(minutes(1));
  tracker_.SetLost(0, true);
  tracker_.SetEccRetirementPending(1, false);
  const HealthSnapshot after = tracker_.Snapshot();
  EXPECT_EQ(after.version, before.version);
  EXPECT_EQ(after.gpus, before.gpus);
}

TEST_F(HealthTrackerTest, WaitForChangeWakesOnAChange) {
  const uint64_t seen = tracker_.Snapshot().version;
  auto waiter = std::async(std::launch::async, [&] {
    // Bounded: returns after 30 s even if nobody wakes it.
    return tracker_.WaitForChange(seen, std::chrono::seconds(30));
  });
  tracker_.RecordXid(0, 79);
  EXPECT_NE(waiter.get(), seen);
}

TEST_F(HealthTrackerTest, WaitForChangeReturnsOnceStopped) {
  const uint64_t seen = tracker_.Snapshot().version;
  tracker_.Stop();
  auto waiter = std::async(std::launch::async,
                           [&] { return tracker_.WaitForChange(seen, std::chrono::hours(1)); });
  // Not a timing assertion: a stopped tracker returns at once, a broken one
  // in an hour.
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(waiter.get(), seen);
}

}  // namespace
}  // namespace canhazgpu::gpu
