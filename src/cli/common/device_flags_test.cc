#include "cli/common/device_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<dra::DeviceWants> Wants(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, DeviceSelectionFlags(8), "run");
  if (!flags.ok()) return flags.status();
  return ParseDeviceWants(*flags);
}

// Issue 32: `canhazgpu run --where A --where B` failed ("given more than
// once") where `k8shazgpu run` took both.
TEST(DeviceFlagsTest, WhereIsRepeatableAndEverySelectorIsKept) {
  absl::StatusOr<dra::DeviceWants> wants =
      Wants({"--where",
             "device.capacity[\"gpu.canhazgpu.dev\"].memory.compareTo(quantity(\"40Gi\")) >= 0",
             "--where", "device.attributes[\"gpu.canhazgpu.dev\"].architecture == \"Hopper\""});
  ASSERT_TRUE(wants.ok()) << wants.status();
  EXPECT_THAT(wants->where,
              ElementsAre(HasSubstr("memory.compareTo"), HasSubstr("architecture == \"Hopper\"")));
}

TEST(DeviceFlagsTest, TheOtherWantsAreReadAsGiven) {
  absl::StatusOr<dra::DeviceWants> wants =
      Wants({"--min-memory", "40Gi", "--product", "a100", "--mig", "1g.10gb"});
  ASSERT_TRUE(wants.ok()) << wants.status();
  EXPECT_EQ(wants->min_memory, "40Gi");
  EXPECT_EQ(wants->product, "a100");
  EXPECT_EQ(wants->mig_profile, "1g.10gb");
  EXPECT_TRUE(Wants({})->empty());
}

TEST(DeviceFlagsTest, ASelectorThatDoesNotCompileOrABadQuantityIsRefusedAtOnce) {
  absl::StatusOr<dra::DeviceWants> typo = Wants({"--where", "device.attributes[\"x\"].y =="});
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<dra::DeviceWants> size = Wants({"--min-memory", "forty"});
  EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceFlagsTest, TheCountIsBoundedByTheProgramsMaximum) {
  const std::vector<FlagSpec> flags = DeviceSelectionFlags(8);
  ASSERT_EQ(flags[0].name, "gpus");
  EXPECT_TRUE(CheckFlagValue(flags[0], "8").ok());
  EXPECT_THAT(CheckFlagValue(flags[0], "9").message(), HasSubstr("from 1 to 8"));
  EXPECT_FALSE(CheckFlagValue(flags[0], "0").ok());
}

}  // namespace
}  // namespace canhazgpu::cli
