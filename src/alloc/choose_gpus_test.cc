#include "alloc/choose_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu::alloc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using State = GpuCandidate::State;

TimePoint Minute(int m) { return FromEpochMillis(int64_t{m} * 60'000); }

std::vector<GpuCandidate> FreeGpus(int n) { return std::vector<GpuCandidate>(n); }

std::string Message(const absl::StatusOr<std::vector<int>>& r) {
  return std::string(r.status().message());
}

TEST(AllocatorTest, NeverUsedGpusComeFirstThenLeastRecentlyReleased) {
  auto gpus = FreeGpus(4);
  gpus[0].last_released = Minute(30);
  gpus[1].last_released = Minute(10);
  gpus[3].last_released = Minute(20);
  auto chosen = ChooseGpus(gpus, {.count = 4});
  ASSERT_TRUE(chosen.ok());
  EXPECT_THAT(*chosen, ElementsAre(2, 1, 3, 0));
}

// The reference tool approximated dates as days = (Y-1970)*365 + (M-1)*30 + D,
// which sorts Feb 1 11:00 before Jan 31 12:00. Real timestamps do not.
TEST(AllocatorTest, OrdersAcrossMonthBoundariesByRealTime) {
  auto gpus = FreeGpus(4);
  gpus[1].last_released = FromEpochMillis(1'769'860'800'000);  // 2026-01-31 12:00 UTC
  gpus[2].last_released = FromEpochMillis(1'769'943'600'000);  // 2026-02-01 11:00 UTC
  gpus[3].last_released = FromEpochMillis(1'768'478'400'000);  // 2026-01-15 12:00 UTC
  EXPECT_THAT(ChooseGpus(gpus, {.count = 4}).value(), ElementsAre(0, 3, 1, 2));
}

TEST(AllocatorTest, PrefersGpusTheRequesterUsedMostRecently) {
  auto gpus = FreeGpus(4);
  gpus[0].last_released = Minute(1);
  gpus[2].last_released = Minute(50);
  gpus[2].last_used_by_requester = Minute(40);
  gpus[3].last_released = Minute(60);
  gpus[3].last_used_by_requester = Minute(60);
  EXPECT_THAT(ChooseGpus(gpus, {.count = 3}).value(), ElementsAre(3, 2, 1));
}

TEST(AllocatorTest, TiesBreakByLowestIdDeterministically) {
  EXPECT_THAT(ChooseGpus(FreeGpus(8), {.count = 3}).value(), ElementsAre(0, 1, 2));
}

TEST(AllocatorTest, SkipsReservedInUseAndErroringGpus) {
  auto gpus = FreeGpus(4);
  gpus[0].state = State::kReserved;
  gpus[1].state = State::kInUse;
  gpus[2].state = State::kError;
  EXPECT_THAT(ChooseGpus(gpus, {.count = 1}).value(), ElementsAre(3));
  auto short_of = ChooseGpus(gpus, {.count = 2});
  EXPECT_EQ(short_of.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(short_of),
              HasSubstr("requested 2, 1 free of 4 (1 reserved, 1 in use without reservation, "
                        "1 in error)"));
}

TEST(AllocatorTest, ForceTakesUnreservedGpusButAfterFreeOnes) {
  auto gpus = FreeGpus(3);
  gpus[0].state = State::kInUse;
  gpus[2].state = State::kReserved;
  EXPECT_THAT(ChooseGpus(gpus, {.count = 2, .force = true}).value(), ElementsAre(1, 0));
  EXPECT_FALSE(ChooseGpus(gpus, {.count = 3, .force = true}).ok()) << "force never takes reserved";
}

TEST(AllocatorTest, ExplicitIdsAreAllOrNothing) {
  auto gpus = FreeGpus(4);
  gpus[2].state = State::kReserved;
  gpus[2].reason = "reserved by alice";
  EXPECT_THAT(ChooseGpus(gpus, {.ids = {3, 1}}).value(), ElementsAre(3, 1));
  auto taken = ChooseGpus(gpus, {.ids = {1, 2}});
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Message(taken), "gpu 2 is reserved by alice");
}

TEST(AllocatorTest, OnlyEligibleGpusAreChosenOrCounted) {
  auto gpus = FreeGpus(4);
  std::vector<int> matching = {1, 3};
  EXPECT_THAT(ChooseGpus(gpus, {.count = 2, .eligible = matching}).value(), ElementsAre(1, 3));
  gpus[3].state = State::kReserved;
  gpus[0].state = State::kInUse;  // not eligible: not part of the shortage
  auto short_of = ChooseGpus(gpus, {.count = 2, .eligible = matching});
  EXPECT_EQ(short_of.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Message(short_of),
            "not enough GPUs available: requested 2, 1 free of 2 matching "
            "(1 reserved)");
  auto never = ChooseGpus(gpus, {.count = 3, .eligible = matching});
  EXPECT_EQ(never.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(never), "requested 3 GPUs but only 2 match");
  auto other = ChooseGpus(gpus, {.ids = {2}, .eligible = matching});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ChooseGpus(gpus, {.ids = {1}, .eligible = matching}).value(), ElementsAre(1));
}

TEST(AllocatorTest, InUseIdNeedsForce) {
  auto gpus = FreeGpus(2);
  gpus[1].state = State::kInUse;
  gpus[1].reason = "in use without reservation by bob";
  EXPECT_THAT(Message(ChooseGpus(gpus, {.ids = {1}})), HasSubstr("use --force if it is yours"));
  EXPECT_THAT(ChooseGpus(gpus, {.ids = {1}, .force = true}).value(), ElementsAre(1));
}

TEST(AllocatorTest, ImpossibleRequestsAreInvalidNotUnavailable) {
  auto gpus = FreeGpus(4);
  auto too_many = ChooseGpus(gpus, {.count = 5});
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(too_many), HasSubstr("the pool has only 4"));
  auto out_of_range = ChooseGpus(gpus, {.ids = {1, 9}});
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(out_of_range), HasSubstr("gpu id 9 is out of range: the pool has GPUs 0-3"));
  EXPECT_EQ(ChooseGpus(gpus, {.count = 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace canhazgpu::alloc
