// ClaimedAhead over hand-built snapshots: which free GPUs the waiters ahead
// of a request would take. The queue tests cover the rule through the store;
// these pin the cases that are awkward to reach there (--force, holds,
// preferences among more GPUs than a waiter lacks).
#include "alloc/backfill.h"

#include <gtest/gtest.h>

#include <map>

namespace canhazgpu::alloc {
namespace {

constexpr uint32_t kAliceUid = 1000, kBobUid = 1001;

QueueEntry Waiter(int64_t id, int count, uint32_t uid = kAliceUid) {
  return QueueEntry{
      .id = id, .uid = uid, .user = uid == kAliceUid ? "alice" : "bob", .count = count};
}

GpuStatus Free(int gpu) { return GpuStatus{.gpu = gpu}; }

// Busy above the threshold with no reservation, by one process of `uid`.
GpuStatus BusyWithoutReservation(int gpu, uint32_t uid) {
  GpuStatus s{.gpu = gpu, .state = GpuState::kUnreserved};
  s.processes.push_back(
      ProcessUsage{.pid = 100 + gpu, .uid = uid, .user = uid == kAliceUid ? "alice" : "bob"});
  return s;
}

GpuStatus HeldBy(int gpu, int64_t queue_id) {
  GpuStatus s{.gpu = gpu, .state = GpuState::kInUse};
  s.reservation = Reservation{.gpu = gpu, .queue_id = queue_id};
  return s;
}

// GPU -> claiming entry id, for comparisons.
std::map<int, int64_t> Ids(const std::map<int, const QueueEntry*>& claimed) {
  std::map<int, int64_t> ids;
  for (const auto& [gpu, e] : claimed) ids[gpu] = e->id;
  return ids;
}

TEST(ClaimedAheadTest, EarliestWaiterThatCanUseAGpuGetsIt) {
  QueueEntry ids_head = Waiter(1, 2);
  ids_head.ids = {0, 1};
  QueueEntry selector = Waiter(2, 1);
  selector.eligible = std::vector<int>{1, 2};
  const std::vector<QueueEntry> queue = {ids_head, selector, Waiter(3, 1)};
  const std::vector<GpuStatus> status = {Free(0), Free(1), Free(2), Free(3)};

  EXPECT_EQ(Ids(ClaimedAhead(queue, status, std::nullopt)),
            (std::map<int, int64_t>{{0, 1}, {1, 1}, {2, 2}, {3, 3}}));
  // Entry 3 sees only what the two before it take: GPU 3 is left to it.
  EXPECT_EQ(Ids(ClaimedAhead(queue, status, 3)), (std::map<int, int64_t>{{0, 1}, {1, 1}, {2, 2}}));
  EXPECT_TRUE(ClaimedAhead(queue, status, 1).empty());
}

TEST(ClaimedAheadTest, AWaiterTakesOnlyWhatItStillLacks) {
  const std::vector<QueueEntry> queue = {Waiter(1, 2), Waiter(2, 1)};
  // Entry 1 holds GPU 0 already and lacks one more.
  const std::vector<GpuStatus> status = {HeldBy(0, 1), Free(1), Free(2)};
  // It takes the lowest of the two it could (nobody behind asks for either).
  EXPECT_EQ(Ids(ClaimedAhead(queue, status, std::nullopt)),
            (std::map<int, int64_t>{{1, 1}, {2, 2}}));

  // Complete: it claims nothing more.
  const std::vector<GpuStatus> complete = {HeldBy(0, 1), HeldBy(1, 1), Free(2)};
  EXPECT_EQ(Ids(ClaimedAhead(queue, complete, std::nullopt)), (std::map<int, int64_t>{{2, 2}}));
}

TEST(ClaimedAheadTest, ACountWaiterLeavesTheGpusALaterWaiterAsksForByIdOrSelector) {
  QueueEntry wants_zero = Waiter(2, 1);
  wants_zero.ids = {0};
  QueueEntry wants_one = Waiter(3, 1);
  wants_one.eligible = std::vector<int>{1};
  const std::vector<QueueEntry> queue = {Waiter(1, 2), wants_zero, wants_one};
  const std::vector<GpuStatus> status = {Free(0), Free(1), Free(2), Free(3)};
  EXPECT_EQ(Ids(ClaimedAhead(queue, status, std::nullopt)),
            (std::map<int, int64_t>{{0, 2}, {1, 3}, {2, 1}, {3, 1}}));
}

TEST(ClaimedAheadTest, ForceCountsAGpuBusyWithTheUsersOwnProcessesAsFree) {
  QueueEntry forced = Waiter(1, 1);
  forced.force = true;
  const std::vector<QueueEntry> queue = {forced};
  EXPECT_EQ(Ids(ClaimedAhead(queue, {BusyWithoutReservation(0, kAliceUid)}, std::nullopt)),
            (std::map<int, int64_t>{{0, 1}}));
  // Another user's processes are not alice's to override.
  EXPECT_TRUE(ClaimedAhead(queue, {BusyWithoutReservation(0, kBobUid)}, std::nullopt).empty());
  // Busy with no process listed: whose it is cannot be told.
  EXPECT_TRUE(
      ClaimedAhead(queue, {GpuStatus{.gpu = 0, .state = GpuState::kUnreserved}}, std::nullopt)
          .empty());
  // Without --force, a busy GPU is never free, even of one's own processes.
  EXPECT_TRUE(
      ClaimedAhead({Waiter(1, 1)}, {BusyWithoutReservation(0, kAliceUid)}, std::nullopt).empty());
}

TEST(ClaimedAheadTest, ForceByRootOverridesAnyonesProcesses) {
  QueueEntry root = Waiter(1, 1, 0);
  root.user = "root";
  root.force = true;
  EXPECT_EQ(Ids(ClaimedAhead({root}, {BusyWithoutReservation(0, kBobUid)}, std::nullopt)),
            (std::map<int, int64_t>{{0, 1}}));
}

TEST(ClaimedAheadTest, AForcedWaiterPrefersAFreeGpuToOneItWouldOverride) {
  QueueEntry forced = Waiter(1, 1);
  forced.force = true;
  const std::vector<GpuStatus> status = {BusyWithoutReservation(0, kAliceUid), Free(1)};
  EXPECT_EQ(Ids(ClaimedAhead({forced, Waiter(2, 1)}, status, std::nullopt)),
            (std::map<int, int64_t>{{1, 1}}));
}

TEST(ClaimedAheadTest, AnErrorOrReservedGpuIsNobodys) {
  const std::vector<GpuStatus> status = {
      GpuStatus{.gpu = 0, .state = GpuState::kError, .error = "lost"},
      GpuStatus{.gpu = 1, .state = GpuState::kInUse, .reservation = Reservation{.gpu = 1}}};
  QueueEntry forced = Waiter(1, 2);
  forced.force = true;
  EXPECT_TRUE(ClaimedAhead({forced}, status, std::nullopt).empty());
}

TEST(ClaimedAheadTest, ConsidersIdsThenEligibleThenAny) {
  QueueEntry ids = Waiter(1, 1);
  ids.ids = {2};
  EXPECT_TRUE(Considers(ids, 2));
  EXPECT_FALSE(Considers(ids, 1));
  QueueEntry selector = Waiter(2, 1);
  selector.eligible = std::vector<int>{1, 3};
  EXPECT_TRUE(Considers(selector, 3));
  EXPECT_FALSE(Considers(selector, 2));
  selector.eligible = std::vector<int>{};  // the selection matched nothing
  EXPECT_FALSE(Considers(selector, 0));
  EXPECT_TRUE(Considers(Waiter(3, 1), 7));
}

}  // namespace
}  // namespace canhazgpu::alloc
