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

TEST(FlagsTest, AChoiceTakesOnlyItsValuesAndSaysWhichTheyAre) {
  const FlagSpec format{
      .name = "log-format", .kind = FlagKind::kChoice, .choices = {"text", "json", "logfmt"}};
  EXPECT_TRUE(CheckFlagValue(format, "json").ok());
  EXPECT_EQ(CheckFlagValue(format, "JSON").message(), "expected text, json or logfmt");
  EXPECT_EQ(CheckFlagValue(format, "").message(), "expected text, json or logfmt");
}

TEST(FlagsTest, AQuantityIsAKubernetesQuantityOfAtLeastZero) {
  const FlagSpec limit{.name = "memory", .kind = FlagKind::kQuantity};
  for (const char* ok : {"0", "500Gi", "1.5T", "40e9"}) EXPECT_TRUE(CheckFlagValue(limit, ok).ok());
  EXPECT_EQ(CheckFlagValue(limit, "-5Gi").message(), "expected a quantity of at least 0");
  EXPECT_THAT(CheckFlagValue(limit, "5GB").message(), HasSubstr("invalid quantity '5GB'"));
  EXPECT_THAT(CheckFlagValue(limit, "9Ei").message(), HasSubstr("does not fit in 64 bits"));
}

TEST(FlagsTest, Issue14IntegerFlagsAreRangeChecked) {
  const FlagSpec threshold{.name = "memory-threshold", .kind = FlagKind::kCount, .max = 16777216};
  EXPECT_TRUE(CheckFlagValue(threshold, "0").ok());
  EXPECT_TRUE(CheckFlagValue(threshold, "16777216").ok());
  // 17592186044416 MiB is 2^64 bytes: it wrapped to 0 before the bound.
  EXPECT_THAT(CheckFlagValue(threshold, "17592186044416").message(),
              HasSubstr("expected an integer from 0 to 16777216"));
  EXPECT_THAT(CheckFlagValue(threshold, "-1").message(), HasSubstr("from 0 to 16777216"));
  const FlagSpec days{.name = "days", .kind = FlagKind::kPositiveInt, .max = 3650};
  EXPECT_THAT(CheckFlagValue(days, "30000").message(),
              HasSubstr("expected an integer from 1 to 3650"));
  EXPECT_THAT(CheckFlagValue(days, "0").message(), HasSubstr("from 1 to 3650"));
  // Without a stated maximum an integer still fits an int.
  const FlagSpec plain{.name = "n", .kind = FlagKind::kPositiveInt};
  EXPECT_TRUE(CheckFlagValue(plain, "2147483647").ok());
  EXPECT_FALSE(CheckFlagValue(plain, "2147483648").ok());
}

TEST(FlagsTest, Issue14NulInAnyValueIsRejected) {
  const FlagSpec note{.name = "note", .has_value = true};
  EXPECT_THAT(CheckFlagValue(note, std::string("be\0fore", 7)).message(),
              HasSubstr("contains a NUL byte"));
  EXPECT_TRUE(CheckFlagValue(note, "before").ok());
}

TEST(FlagsTest, GlobalFlagsBeforeTheCommandMoveAfterIt) {
  const std::vector<FlagSpec> globals = {
      {.name = "state", .has_value = true},
      {.name = "namespace", .short_name = 'n', .has_value = true},
      {.name = "no-color"},
      {.name = "remote_hosts", .has_value = true, .config_only = true}};
  auto moved = [&](std::vector<std::string> args) { return CommandFirst(args, globals, "prog"); };
  EXPECT_THAT(*moved({"--state", "F", "status", "-v"}),
              ElementsAre("status", "--state", "F", "-v"));
  EXPECT_THAT(*moved({"--state=F", "-n", "team", "--no-color", "run", "--", "-x"}),
              ElementsAre("run", "--state=F", "-n", "team", "--no-color", "--", "-x"));
  // Nothing to move, or nothing to move it after.
  EXPECT_THAT(*moved({"status", "--state", "F"}), ElementsAre("status", "--state", "F"));
  EXPECT_THAT(*moved({"--state", "F"}), ElementsAre("--state", "F"));
  EXPECT_THAT(*moved({"--no-color", "--help"}), ElementsAre("--no-color", "--help"));
  EXPECT_THAT(*moved({}), ElementsAre());

  EXPECT_EQ(moved({"--gpus", "2", "run"}).status().message(),
            "unknown flag '--gpus' before the command; only global flags may come first (prog "
            "--help lists them)");
  EXPECT_FALSE(moved({"--remote_hosts", "a", "status"}).ok());  // a setting, not a flag
  EXPECT_EQ(moved({"status"}).value(), std::vector<std::string>{"status"});
  EXPECT_EQ(moved({"--state"}).status().message(), "flag '--state' needs a value");
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

TEST(FlagsTest, ARepeatableFlagKeepsEveryValueInOrder) {
  const std::vector<FlagSpec> specs = {
      {.name = "env", .has_value = true, .value_name = "K=V", .repeatable = true},
      {.name = "image", .has_value = true}};
  auto parsed = ParseFlags({"--env", "A=1", "--env=B=2 3", "--image", "x"}, specs, "run");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->Values("env"), ElementsAre("A=1", "B=2 3"));
  EXPECT_THAT(parsed->Values("image"), ElementsAre("x"));
  EXPECT_THAT(parsed->Values("absent"), ::testing::IsEmpty());
  // Other flags still refuse a second value.
  EXPECT_FALSE(ParseFlags({"--image", "x", "--image", "y"}, specs, "run").ok());
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
