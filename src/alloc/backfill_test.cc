// ClaimedAhead and ShareRoomsBehind over hand-built snapshots: which free
// GPUs the waiters ahead of a request would take, and the room they leave a
// share. The queue tests cover the rule through the store;
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

constexpr uint64_t kRoomGi = uint64_t{1} << 30;

// A GPU of 80Gi held by one share of `gib` (79.5Gi to share).
GpuStatus SharedBy(int gpu, uint64_t gib) {
  GpuStatus s{.gpu = gpu, .state = GpuState::kInUse};
  s.info = GpuInfo{.index = gpu, .memory_total_bytes = 80 * kRoomGi};
  s.shares = {Reservation{.gpu = gpu,
                          .memory = gib * kRoomGi,
                          .share = "s" + std::to_string(gpu),
                          .shareable = 79 * kRoomGi + kRoomGi / 2,
                          .user = "carol"}};
  s.reservation = s.shares[0];
  return s;
}

// What a share may have behind the waiters: a whole-GPU waiter keeps the
// shared GPU it waits for (of those it could use, the least used), a share
// waiter that does not fit keeps its memory on the GPU it waits for, and
// each waiter sees only what those before it keep.
TEST(ShareRoomsBehindTest, KeepsWhatEarlierWaitersWaitFor) {
  QueueEntry whole = Waiter(1, 1);
  whole.eligible = std::vector<int>{1, 2};
  QueueEntry share = Waiter(2, 1, kBobUid);
  share.memory = 60 * kRoomGi;
  share.ids = {0};
  const std::vector<QueueEntry> queue = {whole, share};
  const std::vector<GpuStatus> status = {SharedBy(0, 50), SharedBy(1, 20), SharedBy(2, 30)};

  std::vector<ShareRoom> rooms = ShareRoomsBehind(queue, status, std::nullopt);
  ASSERT_EQ(rooms.size(), 3u);
  EXPECT_EQ(rooms[0].Left(), 0u) << "bob's 60Gi is kept beside carol's 50Gi";
  EXPECT_EQ(rooms[0].kept_for, std::vector<std::string>{"60Gi kept for bob, who queued first"});
  EXPECT_FALSE(rooms[1].shareable) << "the least used GPU alice could use";
  EXPECT_EQ(rooms[1].reason, "wanted whole by alice, who queued first (waiting for its shares)");
  // Who keeps each, by queue entry, for the node to name them apart.
  EXPECT_EQ(rooms[0].kept_by, std::vector<int64_t>{2});
  EXPECT_EQ(rooms[1].kept_by, std::vector<int64_t>{1});
  EXPECT_TRUE(rooms[2].kept_by.empty());
  EXPECT_TRUE(rooms[2].shareable);
  EXPECT_EQ(rooms[2].Left(), 49 * kRoomGi + kRoomGi / 2);

  // Bob sees only what alice keeps.
  rooms = ShareRoomsBehind(queue, status, 2);
  EXPECT_EQ(rooms[0].Left(), 29 * kRoomGi + kRoomGi / 2);
  EXPECT_TRUE(rooms[0].kept_for.empty());
  EXPECT_FALSE(rooms[1].shareable);
  // Alice sees nothing kept.
  rooms = ShareRoomsBehind(queue, status, 1);
  EXPECT_TRUE(rooms[1].shareable);
}

// A whole-GPU waiter that gets a free GPU now keeps no shared GPU as well.
TEST(ShareRoomsBehindTest, AWaiterServedByAFreeGpuKeepsNoSharedOne) {
  GpuStatus idle = Free(1);
  idle.info = GpuInfo{.index = 1, .memory_total_bytes = 80 * kRoomGi};
  const std::vector<GpuStatus> status = {SharedBy(0, 10), idle};
  ASSERT_TRUE(RoomsOf(status)[1].shareable);
  std::vector<ShareRoom> rooms = ShareRoomsBehind({Waiter(1, 1)}, status, std::nullopt);
  EXPECT_TRUE(rooms[0].shareable);
  EXPECT_FALSE(rooms[1].shareable);
  EXPECT_EQ(rooms[1].reason, "wanted by alice, who queued first");
  EXPECT_EQ(rooms[1].kept_by, std::vector<int64_t>{1});
  EXPECT_TRUE(rooms[0].kept_by.empty());
}

}  // namespace
}  // namespace canhazgpu::alloc
