#include "alloc/report.h"

#include <gtest/gtest.h>

#include "alloc/queue.h"
#include "host/testing/fake_clock.h"
#include "host/testing/fake_process_table.h"
#include "store/memory_state_store.h"

namespace canhazgpu::alloc {
namespace {

constexpr int64_t kMin = 60'000;
TimePoint At(int64_t minute) { return FromEpochMillis(minute * kMin); }

HistoryRecord Record(int gpu, const std::string& user, ReservationKind kind, int64_t start,
                     int64_t end) {
  return {.gpu = gpu,
          .uid = static_cast<uint32_t>(user[0]),
          .user = user,
          .kind = kind,
          .start = At(start),
          .end = At(end)};
}

TEST(ReportTest, ClipsToThePeriodAndSplitsRunAndManual) {
  ReportInput input{.from = At(100), .to = At(200), .gpu_count = 2};
  input.history = {Record(0, "alice", ReservationKind::kRun, 50, 130),      // 30 in the period
                   Record(1, "alice", ReservationKind::kManual, 110, 120),  // 10
                   Record(1, "bob", ReservationKind::kRun, 150, 190)};      // 40
  Reservation live{
      .gpu = 0, .uid = 'b', .user = "bob", .kind = ReservationKind::kManual, .start = At(180)};
  input.active = {live};  // 20, until now
  UsageReport r = BuildReport(input);
  ASSERT_EQ(r.users.size(), 2u);
  EXPECT_EQ(r.users[0].user, "bob");  // 60 minutes beat 40
  EXPECT_EQ(r.users[0].run_ms, 40 * kMin);
  EXPECT_EQ(r.users[0].manual_ms, 20 * kMin);
  EXPECT_EQ(r.users[1].run_ms, 30 * kMin);
  EXPECT_EQ(r.users[1].manual_ms, 10 * kMin);
  EXPECT_EQ(r.users[1].longest_ms, 80 * kMin) << "longest is the whole reservation";
  EXPECT_EQ(r.total.total_ms(), 100 * kMin);
  EXPECT_EQ(r.total.reservations, 4);
  EXPECT_EQ(r.users[0].run_count, 1);
  EXPECT_EQ(r.users[0].manual_count, 1);
  EXPECT_EQ(r.total.run_count, 2);
  EXPECT_EQ(r.total.manual_count, 2);
  EXPECT_EQ(r.available_ms, 200 * kMin);
}

TEST(ReportTest, TimeWithoutSamplesIsUnknownNotIdle) {
  ReportInput input{.from = At(0), .to = At(100), .gpu_count = 1};
  input.history = {Record(0, "alice", ReservationKind::kRun, 0, 60)};
  // Busy at 10 (speaks until 15), idle at 15 (until 20); nothing 20..40;
  // busy at 40 until 45; nothing after.
  input.samples = {{.gpu = 0, .at = At(10), .busy = true},
                   {.gpu = 0, .at = At(15), .busy = false},
                   {.gpu = 0, .at = At(40), .busy = true}};
  UsageReport r = BuildReport(input);
  ASSERT_EQ(r.users.size(), 1u);
  EXPECT_EQ(r.users[0].split.busy_ms, 10 * kMin);
  EXPECT_EQ(r.users[0].split.idle_ms, 5 * kMin);
  EXPECT_EQ(r.users[0].split.unknown_ms, 45 * kMin);
}

TEST(ReportTest, ASampleBeforeTheReservationSpeaksForItsStart) {
  ReportInput input{.from = At(0), .to = At(100), .gpu_count = 1};
  input.history = {Record(0, "alice", ReservationKind::kManual, 12, 20)};
  input.samples = {{.gpu = 0, .at = At(10), .busy = true}, {.gpu = 1, .at = At(12), .busy = true}};
  UsageReport r = BuildReport(input);
  EXPECT_EQ(r.users[0].split.busy_ms, 3 * kMin);  // 12..15 from the sample at 10
  EXPECT_EQ(r.users[0].split.unknown_ms, 5 * kMin);
}

TEST(ReportTest, MultiGpuReservationCountsOnceAndQueueHoldsNotAtAll) {
  ReportInput input{.from = At(0), .to = At(100), .gpu_count = 4};
  input.history = {Record(0, "a", ReservationKind::kRun, 0, 10),
                   Record(1, "a", ReservationKind::kRun, 0, 10)};
  Reservation hold{.gpu = 2, .uid = 'a', .user = "a", .start = At(50)};
  hold.queue_id = 7;
  input.active = {hold};
  UsageReport r = BuildReport(input);
  EXPECT_EQ(r.total.reservations, 1);
  EXPECT_EQ(r.total.total_ms(), 20 * kMin);
}

// A share counts as its part of the GPU (ADR 0018): 10Gi of a GPU with 80Gi
// to share, for 80 minutes, is 10 GPU-minutes, and its busy/idle split is
// that part too; a share recorded without its GPU's figure (before schema
// 11) counts as a whole GPU, the most it could have been.
TEST(ReportTest, AShareCountsItsPartOfTheGpu) {
  constexpr uint64_t kGi = uint64_t{1} << 30;
  ReportInput input{.from = At(0), .to = At(200), .gpu_count = 2};
  HistoryRecord share = Record(0, "alice", ReservationKind::kRun, 0, 80);
  share.memory = 10 * kGi;
  share.shareable = 80 * kGi;
  HistoryRecord old_share = Record(1, "bob", ReservationKind::kManual, 0, 30);
  old_share.memory = 10 * kGi;
  input.history = {share, old_share, Record(1, "bob", ReservationKind::kManual, 40, 50)};
  Reservation live{.gpu = 0,
                   .memory = 40 * kGi,
                   .share = "s-1",
                   .shareable = 80 * kGi,
                   .uid = 'c',
                   .user = "carol",
                   .kind = ReservationKind::kManual,
                   .start = At(180)};
  input.active = {live};  // 20 minutes until now, half the GPU
  // Busy from 0 to 40 (samples speak for 5 minutes each), nothing after.
  for (int64_t m = 0; m < 40; m += 5) input.samples.push_back({.at = At(m), .busy = true});
  UsageReport r = BuildReport(input);
  ASSERT_EQ(r.users.size(), 3u);
  EXPECT_EQ(r.users[0].user, "bob");
  EXPECT_EQ(r.users[0].manual_ms, 40 * kMin) << "the old share counts whole";
  EXPECT_EQ(r.users[0].shared_ms, 30 * kMin);
  EXPECT_EQ(r.users[1].user, "alice");
  EXPECT_EQ(r.users[1].run_ms, 10 * kMin);
  EXPECT_EQ(r.users[1].shared_ms, 10 * kMin);
  EXPECT_EQ(r.users[1].split.busy_ms, 5 * kMin) << "an eighth of 40 busy minutes";
  EXPECT_EQ(r.users[1].split.unknown_ms, 5 * kMin);
  EXPECT_EQ(r.users[1].longest_ms, 80 * kMin) << "the longest is time, not GPU-time";
  EXPECT_EQ(r.users[2].user, "carol");
  EXPECT_EQ(r.users[2].manual_ms, 10 * kMin);
  EXPECT_EQ(r.users[2].shared_ms, 10 * kMin);
  EXPECT_EQ(r.total.shared_ms, 50 * kMin);
  EXPECT_EQ(r.total.total_ms(), 60 * kMin);
  EXPECT_EQ(r.total.reservations, 4);
}

TEST(ReportTest, ARunShorterThanAMillisecondCountsWithNoTime) {
  ReportInput input{.from = At(0), .to = At(100), .gpu_count = 1};
  input.history = {Record(0, "a", ReservationKind::kRun, 30, 30),
                   Record(0, "b", ReservationKind::kRun, 100, 100),  // at the period's end
                   Record(0, "c", ReservationKind::kRun, 120, 120),  // after it
                   Record(0, "d", ReservationKind::kRun, -20, 0)};   // ends as it starts
  UsageReport r = BuildReport(input);
  ASSERT_EQ(r.users.size(), 2u);
  EXPECT_EQ(r.users[0].user, "a");
  EXPECT_EQ(r.users[1].user, "b");
  EXPECT_EQ(r.total.reservations, 2);
  EXPECT_EQ(r.total.total_ms(), 0);
  EXPECT_EQ(r.total.split.unknown_ms, 0);
}

TEST(ReportTest, RecordUsageSamplesAtMostOncePerInterval) {
  store::MemoryStateStore store;
  std::vector<GpuUsage> gpus(2);
  gpus[0].info.index = 0;
  gpus[0].info.memory_used_bytes = 2048 * kMiB;
  gpus[1].info.index = 1;
  gpus[1].info.error = "gone";
  auto record = [&](TimePoint now) {
    return store.Update(
        [&](store::StateTransaction& txn) { return RecordUsage(txn, gpus, 1024 * kMiB, now); });
  };
  ASSERT_TRUE(record(At(10)).ok());
  ASSERT_TRUE(record(At(10) + std::chrono::seconds(30)).ok());
  ASSERT_TRUE(record(At(11)).ok());
  ASSERT_TRUE(store
                  .Read([](store::StateTransaction& t) {
                    auto samples = t.UsageSamplesSince(At(0)).value();
                    EXPECT_EQ(samples.size(), 2u);  // GPU 0 at 10 and 11; GPU 1 unknown
                    EXPECT_TRUE(samples[0].busy);
                    EXPECT_EQ(samples[1].at, At(11));
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(ReportTest, StatusAndQueuePollsRecordSamples) {
  store::MemoryStateStore store;
  ASSERT_TRUE(store
                  .Update([](store::StateTransaction& txn) {
                    return txn.SetPool({.gpu_count = 2, .provider = "fake"});
                  })
                  .ok());
  // GPU 0 busy without a reservation, GPU 1 free (and then reserved).
  std::vector<GpuInfo> gpus(2);
  gpus[0].index = 0;
  gpus[0].memory_used_bytes = 4096 * kMiB;
  gpus[1].index = 1;
  host::FakeClock clock(At(10));
  host::FakeProcessTable processes;
  Machine machine{clock, processes};
  ASSERT_TRUE(CollectStatus(store, gpus, 1024 * kMiB, machine).ok());
  clock.Advance(std::chrono::minutes(2));
  WaitOptions options{.block = false,
                      .query_gpus = [&] { return absl::StatusOr<std::vector<GpuInfo>>(gpus); }};
  ASSERT_TRUE(AcquireGpus(store, {.uid = 1, .user = "a"},
                          {.count = 1, .threshold_bytes = 1024 * kMiB}, machine, options)
                  .ok());
  ASSERT_TRUE(store
                  .Read([](store::StateTransaction& t) {
                    auto samples = t.UsageSamplesSince(At(0)).value();
                    EXPECT_EQ(samples.size(), 4u);  // both GPUs, at 10 and at 12
                    EXPECT_EQ(samples[0].at, At(10));
                    EXPECT_EQ(samples[1].at, At(12));
                    EXPECT_TRUE(samples[1].busy);
                    EXPECT_EQ(samples[3].gpu, 1);
                    EXPECT_FALSE(samples[3].busy);
                    return absl::OkStatus();
                  })
                  .ok());
}

}  // namespace
}  // namespace canhazgpu::alloc
