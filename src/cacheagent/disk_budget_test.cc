#include "cacheagent/disk_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/statvfs.h>

namespace canhazgpu::cacheagent {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const TimePoint kNow = FromEpochMillis(1'790'000'000'000);

CacheFolder Wanted(const char* path, int64_t bytes) {
  return {.path = path, .bytes = bytes, .unwanted_since = std::nullopt};
}
CacheFolder Unwanted(const char* path, int64_t bytes, Duration ago) {
  return {.path = path, .bytes = bytes, .unwanted_since = kNow - ago};
}

TEST(FoldersToRemove, UnwantedPastTheGracePeriodGoWantedStay) {
  std::vector<CacheFolder> folders = {Wanted("/c/a", 10), Unwanted("/c/b", 10, hours(2)),
                                      Unwanted("/c/c", 10, minutes(5))};
  EXPECT_THAT(FoldersToRemove(folders, 0, hours(1), kNow), ElementsAre("/c/b"));
}

TEST(FoldersToRemove, OverTheCeilingTheLongestUnwantedGoFirstUntilUnder) {
  std::vector<CacheFolder> folders = {Wanted("/c/a", 50), Unwanted("/c/new", 30, minutes(1)),
                                      Unwanted("/c/old", 30, minutes(30)),
                                      Unwanted("/c/mid", 30, minutes(10))};
  // 140 bytes, ceiling 90: the oldest two unwanted must go (140-30-30 = 80).
  EXPECT_THAT(FoldersToRemove(folders, 90, hours(1), kNow), ElementsAre("/c/old", "/c/mid"));
  // Under the ceiling nothing within its grace period goes.
  EXPECT_THAT(FoldersToRemove(folders, 200, hours(1), kNow), IsEmpty());
}

TEST(FoldersToRemove, WantedFoldersAreNeverChosenEvenOverTheCeiling) {
  std::vector<CacheFolder> folders = {Wanted("/c/a", 500), Unwanted("/c/b", 1, minutes(1))};
  EXPECT_THAT(FoldersToRemove(folders, 100, hours(1), kNow), ElementsAre("/c/b"));
}

TEST(OverCeiling, CountsOnlyWantedFoldersAndTheExtraBytes) {
  std::vector<CacheFolder> folders = {Wanted("/c/a", 60), Unwanted("/c/b", 1000, minutes(1))};
  EXPECT_FALSE(OverCeiling(folders, 40, 100));
  EXPECT_TRUE(OverCeiling(folders, 41, 100));
  EXPECT_FALSE(OverCeiling(folders, 1'000'000, 0));  // no ceiling
}

TEST(FileSystemShareTest, IsAShareOfTheFileSystemHoldingTheCache) {
  struct statvfs fs {};
  ASSERT_EQ(statvfs("/tmp", &fs), 0);
  const int64_t total = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
  EXPECT_EQ(*FileSystemShare("/tmp", 100), total);
  EXPECT_EQ(*FileSystemShare("/tmp", 40),
            static_cast<int64_t>(static_cast<__int128>(total) * 40 / 100));
  // Not created yet: the nearest existing parent's file system.
  EXPECT_EQ(*FileSystemShare("/tmp/no/such/cache/yet", 40), *FileSystemShare("/tmp", 40));
  EXPECT_EQ(FileSystemShare("/tmp", 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FileSystemShare("/tmp", 101).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace canhazgpu::cacheagent
