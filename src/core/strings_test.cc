#include "core/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu {
namespace {

using ::testing::ElementsAre;

TEST(StringsTest, Cat) { EXPECT_EQ(StrCat("gpu ", 3, ": ", std::string("x"), '!'), "gpu 3: x!"); }

TEST(StringsTest, SplitKeepsOrSkipsEmpty) {
  EXPECT_THAT(Split("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(Split("a,,b", ',', true), ElementsAre("a", "b"));
  EXPECT_THAT(Split("", ','), ElementsAre(""));
}

TEST(StringsTest, TrimAndJoin) {
  EXPECT_EQ(Trim("  x y \n"), "x y");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Join({"a", "b"}, ", "), "a, b");
}

TEST(StringsTest, ParseIntRejectsJunk) {
  int v = 0;
  EXPECT_TRUE(ParseInt("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(ParseInt("42x", &v));
  EXPECT_FALSE(ParseInt("", &v));
  EXPECT_FALSE(ParseInt("99999999999", &v));
}

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("gpus", "gpu"), 1u);
  EXPECT_EQ(EditDistance("status", "stauts"), 2u);
}

}  // namespace
}  // namespace canhazgpu
