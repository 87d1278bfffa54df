#include "core/reservation.h"

#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

constexpr uint64_t kMi = uint64_t{1} << 20;

TEST(ShareableMemoryTest, LeavesTheMarginAndRoundsDownToAMiB) {
  EXPECT_EQ(ShareableMemory(80 * 1024 * kMi), (80 * 1024 - 512) * kMi);
  EXPECT_EQ(ShareableMemory(1024 * kMi + 12345), 512 * kMi) << "a partial MiB is not shared";
  EXPECT_EQ(ShareableMemory(512 * kMi), 0u);
  EXPECT_EQ(ShareableMemory(0), 0u);
}

TEST(ShareableMemoryTest, RequestsRoundUpToAMiB) {
  EXPECT_EQ(RoundUpToShareStep(1), kMi);
  EXPECT_EQ(RoundUpToShareStep(kMi), kMi);
  EXPECT_EQ(RoundUpToShareStep(kMi + 1), 2 * kMi);
}

TEST(EndReservationTest, HistoryKeepsTheSharesMemory) {
  Reservation r{.gpu = 1, .memory = 10 * 1024 * kMi, .share = "s-1", .user = "alice"};
  EXPECT_EQ(EndReservation(r, TimePoint(), ReleaseReason::kReleased).memory, 10 * 1024 * kMi);
}

}  // namespace
}  // namespace canhazgpu
