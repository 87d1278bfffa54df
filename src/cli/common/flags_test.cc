#include "cli/common/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<FlagSpec> kSpecs = {
    {.name = "gpus", .short_name = 'g', .has_value = true, .value_name = "N"},
    {.name = "gpu-ids", .short_name = 'G', .has_value = true, .value_name = "IDS"},
    {.name = "short", .short_name = 's'},
};

std::string Error(std::vector<std::string> args) {
  auto parsed = ParseFlags(args, kSpecs, "reserve");
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(FlagsTest, ParsesLongShortAndInlineForms) {
  auto parsed = ParseFlags({"-g", "2", "--gpu-ids=1,3", "--short"}, kSpecs, "reserve");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("gpus"), "2");
  EXPECT_EQ(parsed->Value("gpu-ids"), "1,3");
  EXPECT_TRUE(parsed->Has("short"));
  auto attached = ParseFlags({"-g3"}, kSpecs, "reserve");
  EXPECT_EQ(attached->Value("gpus"), "3");
}

TEST(FlagsTest, StopsAtSeparator) {
  auto parsed = ParseFlags({"-g", "1", "--", "python", "--gpus", "x"}, kSpecs, "run");
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->saw_separator);
  EXPECT_THAT(parsed->rest, ElementsAre("python", "--gpus", "x"));
}

TEST(FlagsTest, NegativeNumberIsAValueNotAFlag) {
  auto parsed = ParseFlags({"--gpus", "-1"}, kSpecs, "reserve");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Value("gpus"), "-1");
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  EXPECT_EQ(Error({"--gpu", "2"}), "unknown flag --gpu for 'reserve' (did you mean --gpus?)");
  EXPECT_EQ(Error({"--frobnicate"}), "unknown flag --frobnicate for 'reserve'");
  EXPECT_THAT(Error({"--gpus"}), HasSubstr("flag --gpus needs a value"));
  EXPECT_THAT(Error({"-g", "1", "--gpus", "2"}), HasSubstr("given more than once"));
  EXPECT_THAT(Error({"--short=yes"}), HasSubstr("takes no value"));
}

TEST(FlagsTest, PositiveInt) {
  EXPECT_EQ(PositiveInt("gpus", "4").value(), 4);
  for (std::string bad : {"0", "-1", "abc", "1.5", ""}) {
    auto n = PositiveInt("gpus", bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_THAT(std::string(n.status().message()), HasSubstr("for --gpus"));
  }
}

}  // namespace
}  // namespace canhazgpu::cli
