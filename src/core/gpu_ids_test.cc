#include "core/gpu_ids.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(GpuIdsTest, ParsesListKeepingOrder) {
  auto ids = ParseGpuIds("3, 1,2");
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(*ids, ElementsAre(3, 1, 2));
}

TEST(GpuIdsTest, RejectsDuplicates) {
  auto ids = ParseGpuIds("1,1");
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("duplicate gpu id 1"));
}

TEST(GpuIdsTest, RejectsNegativeAndGarbage) {
  absl::Status negative = ParseGpuIds("-1").status();
  EXPECT_THAT(std::string(negative.message()), HasSubstr("non-negative"));
  absl::Status garbage = ParseGpuIds("a").status();
  EXPECT_THAT(std::string(garbage.message()), HasSubstr("invalid gpu id 'a'"));
  EXPECT_FALSE(ParseGpuIds("").ok());
  EXPECT_FALSE(ParseGpuIds("1,,2").ok());
  EXPECT_FALSE(ParseGpuIds("1.5").ok());
}

TEST(GpuIdsTest, Joins) { EXPECT_EQ(JoinGpuIds({1, 3}), "1,3"); }

}  // namespace
}  // namespace canhazgpu
