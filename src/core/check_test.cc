#include "core/check.h"

#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

TEST(CheckTest, AHoldingConditionIsEvaluatedOnceAndGoesOn) {
  int evaluated = 0;
  CANHAZGPU_CHECK(++evaluated == 1);
  EXPECT_EQ(evaluated, 1);
}

TEST(CheckTest, ABrokenInvariantSaysWhereAndAborts) {
  const int* missing = nullptr;
  EXPECT_DEATH(CANHAZGPU_CHECK(missing != nullptr),
               "check_test.cc:[0-9]+: check failed: missing != nullptr");
}

}  // namespace
}  // namespace canhazgpu
