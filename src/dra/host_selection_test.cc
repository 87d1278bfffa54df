#include "dra/host_selection.h"

#include "dra/test_pools.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TestGpu;
using testing::TestMigGpu;

// 0: A100 40GB, 1: H100 80GB, 2: A100 40GB in MIG mode, 3: unreadable.
std::vector<GpuInfo> MixedHost() {
  std::vector<GpuInfo> gpus = {TestGpu(0), TestGpu(1, "NVIDIA H100 80GB HBM3", 81559),
                               TestMigGpu(2), TestGpu(3)};
  gpus[1].compute_capability = "9.0";
  gpus[3].error = "GPU is lost";
  return gpus;
}

std::vector<int> Eligible(const DeviceWants& wants, int count = 1) {
  absl::StatusOr<HostSelection> s = SelectHostGpus(MixedHost(), "node", wants, count);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->eligible : std::vector<int>{};
}

TEST(HostSelectionTest, WholeGpusByMemoryProductAndCel) {
  EXPECT_THAT(Eligible({}), ElementsAre(0, 1, 2));  // the lost GPU is never offered
  EXPECT_THAT(Eligible({.min_memory = "40Gi"}), ElementsAre(0, 1, 2));
  EXPECT_THAT(Eligible({.min_memory = "41Gi"}), ElementsAre(1));
  EXPECT_THAT(Eligible({.min_memory = "80G"}), ElementsAre(1));
  EXPECT_THAT(Eligible({.product = "a100"}), ElementsAre(0, 2));  // any case
  EXPECT_THAT(Eligible({.product = "H100 80GB"}), ElementsAre(1));
  EXPECT_THAT(Eligible({.where = {"device.attributes[\"gpu.canhazgpu.dev\"].cudaComputeCapability"
                                  ".isGreaterThan(semver(\"8.9.0\"))"}}),
              ElementsAre(1));
  // Every flag must hold.
  EXPECT_THAT(
      Eligible({.where = {"device.attributes['gpu.canhazgpu.dev'].index != 0"}, .product = "A100"}),
      ElementsAre(2));
}

TEST(HostSelectionTest, SelectorsNameTheAttributesOfTheDriverAskedFor) {
  const DeviceWants wants = {.min_memory = "40Gi", .product = "A100", .mig_profile = "1g.10gb"};
  absl::StatusOr<std::vector<std::string>> nvidia = wants.Selectors("gpu.nvidia.com");
  ASSERT_TRUE(nvidia.ok()) << nvidia.status();
  EXPECT_THAT(*nvidia, ElementsAre("device.attributes[\"gpu.nvidia.com\"].type == \"mig\"",
                                   "device.attributes[\"gpu.nvidia.com\"].profile == \"1g.10gb\"",
                                   "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity("
                                   "\"40Gi\")) >= 0",
                                   "device.attributes[\"gpu.nvidia.com\"].productName.lowerAscii()"
                                   ".contains(\"a100\")"));
  absl::StatusOr<std::vector<std::string>> ours = wants.Selectors();
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_THAT((*ours)[0], HasSubstr("\"gpu.canhazgpu.dev\""));
}

TEST(HostSelectionTest, MigProfileSelectsTheParentAndNamesTheInstance) {
  absl::StatusOr<HostSelection> s =
      SelectHostGpus(MixedHost(), "node", {.mig_profile = "1g.5gb"}, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->eligible, ElementsAre(2));
  // The first matching instance of the GPU, in device order.
  EXPECT_EQ(s->mig_uuid.at(2), "MIG-2-a");
  s = SelectHostGpus(MixedHost(), "node", {.mig_profile = "3g.20gb"}, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->mig_uuid.at(2), "MIG-2-c");
  // Selectors apply to the instance: its memory, not the GPU's.
  s = SelectHostGpus(MixedHost(), "node", {.min_memory = "10Gi", .mig_profile = "1g.5gb"}, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
}

TEST(HostSelectionTest, TooFewMatchesExplainsWhatEachSelectorRejected) {
  absl::StatusOr<HostSelection> s =
      SelectHostGpus(MixedHost(), "node", {.min_memory = "41Gi", .product = "a100"}, 1);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  std::string message(s.status().message());
  EXPECT_THAT(message, HasSubstr("no 1 GPU(s) on this host can ever match --min-memory 41Gi "
                                 "--product 'a100': 0 of 4 GPUs do"));
  EXPECT_THAT(message, HasSubstr("selector rejected 2: device.capacity"));
  EXPECT_THAT(message, HasSubstr("selector rejected 1: device.attributes[\"gpu.canhazgpu.dev\"]"
                                 ".productName.lowerAscii()"));

  // Enough GPUs match one each, but not as many as asked for.
  s = SelectHostGpus(MixedHost(), "node", {.product = "A100"}, 3);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("2 of 4 GPUs do"));
  // Two instances of one GPU are still one GPU to the store.
  s = SelectHostGpus(MixedHost(), "node", {.mig_profile = "1g.5gb"}, 2);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("no 2 GPU(s) with a matching MIG instance"));
}

TEST(HostSelectionTest, BadSelectorsAreRefusedWithThePosition) {
  absl::StatusOr<HostSelection> s =
      SelectHostGpus(MixedHost(), "node", {.where = {"device.attributes["}}, 1);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("--where: 1:19: unexpected 'end of input' (near 'device.attributes[')"));
  EXPECT_TRUE(absl::IsInvalidArgument(
      DeviceWants{.where = {"device.attributes['gpu.canhazgpu.dev'].index + 'x'"}}
          .Selectors()
          .status()));

  // A missing attribute is a runtime error, with Kubernetes' hint.
  s = SelectHostGpus(MixedHost(), "node",
                     {.where = {"device.attributes['gpu.canhazgpu.dev'].profile == 'x'"}}, 1);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("has("));

  s = SelectHostGpus(MixedHost(), "node", {.where = {"device.driver"}}, 1);
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
}

TEST(HostSelectionTest, FlagValuesAreCheckedAndQuoted) {
  EXPECT_TRUE(absl::IsInvalidArgument(DeviceWants{.min_memory = "40GB"}.Selectors().status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DeviceWants{.min_memory = "-1Gi"}.Selectors().status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DeviceWants{.product = ""}.Selectors().status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DeviceWants{.where = {""}}.Selectors().status()));
  // Quotes and backslashes in a product name stay inside the string literal.
  std::vector<GpuInfo> gpus = {TestGpu(0, "Odd \"GPU\" \\ x")};
  absl::StatusOr<HostSelection> s = SelectHostGpus(gpus, "node", {.product = "odd \"gpu\" \\"}, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->eligible, ElementsAre(0));
  s = SelectHostGpus(gpus, "node", {.product = "\") || true || (\""}, 1);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(SelectHostGpus({}, "node", {}, 1).status().message(), HasSubstr("0 of 0 GPUs"));
  EXPECT_EQ(
      DeviceWants({.where = {"true"}, .min_memory = "1Gi", .mig_profile = "1g.5gb"}).Describe(),
      "--where 'true' --min-memory 1Gi --mig 1g.5gb");
  EXPECT_THAT(DeviceWants{}.Describe(), IsEmpty());
  // A long selector over many lines is quoted as one short line.
  std::string long_where;
  for (int i = 0; i < 100; ++i) long_where += "device.driver != 'x' &&\n";
  const std::string described = DeviceWants{.where = {long_where + "true"}}.Describe();
  EXPECT_LT(described.size(), 100u);
  EXPECT_THAT(described, HasSubstr("--where 'device.driver != 'x' &&\\ndevice"));
  // Nor does the allocator's explanation echo it whole.
  absl::StatusOr<HostSelection> none =
      SelectHostGpus(MixedHost(), "node", {.where = {long_where + "false"}}, 1);
  ASSERT_FALSE(none.ok());
  EXPECT_LT(none.status().message().size(), 1000u) << none.status().message();
}

}  // namespace
}  // namespace canhazgpu::dra
