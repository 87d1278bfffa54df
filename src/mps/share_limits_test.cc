#include "mps/share_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/gpu.h"

namespace canhazgpu::mps {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kLimitsUuid = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";

TEST(ShareLimitsTest, ControlProgramIsUnderTheDriverRoot) {
  EXPECT_EQ(ControlProgramPath("/"), "/usr/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(ControlProgramPath("/run/nvidia/driver"),
            "/run/nvidia/driver/usr/bin/nvidia-cuda-mps-control");
}

TEST(ShareLimitsTest, MemoryValueIsWholeMibRoundedDown) {
  EXPECT_EQ(MpsMemoryValue(10 * 1024 * kMiB), "10240M");
  EXPECT_EQ(MpsMemoryValue(2 * kMiB - 1), "1M");  // never above the share
}

TEST(ShareLimitsTest, ThreadPercentageFollowsMemoryRoundedUp) {
  const uint64_t gpu = 80 * 1024 * kMiB;
  EXPECT_EQ(ActiveThreadPercentage(gpu / 2, gpu), 50);
  EXPECT_EQ(ActiveThreadPercentage(10 * 1024 * kMiB, 81408 * kMiB), 13);  // 12.58 up
  EXPECT_EQ(ActiveThreadPercentage(kMiB, gpu), 1);                        // at least 1
  EXPECT_EQ(ActiveThreadPercentage(gpu, gpu), 100);
  // No overflow for the largest amounts.
  EXPECT_EQ(ActiveThreadPercentage(UINT64_MAX / 2, UINT64_MAX), 50);
}

TEST(ShareLimitsTest, EnvironmentKeysTheLimitByUuid) {
  std::vector<EnvVar> env =
      ShareEnvironment(kLimitsUuid, "/run/mps/pipe", 10 * 1024 * kMiB, 40 * 1024 * kMiB);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0].name, "CUDA_MPS_PIPE_DIRECTORY");
  EXPECT_EQ(env[0].value, "/run/mps/pipe");
  EXPECT_EQ(env[1].name, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  EXPECT_EQ(env[1].value, std::string(kLimitsUuid) + "=10240M");
  EXPECT_EQ(env[2].name, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  EXPECT_EQ(env[2].value, "25");
}

TEST(ShareLimitsTest, BadSharesAreRefusedNamingTheGpu) {
  EXPECT_TRUE(ValidateShare(kLimitsUuid, "share-1", kMiB, kMiB).ok());
  absl::Status index = ValidateShare("0", "s", kMiB, kMiB);
  EXPECT_EQ(index.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(index.message(), HasSubstr("gpu 0: not a GPU UUID"));
  EXPECT_THAT(ValidateShare(kLimitsUuid, "../x", kMiB, kMiB).message(),
              HasSubstr(std::string("gpu ") + std::string(kLimitsUuid) + ": share id"));
  EXPECT_THAT(ValidateShare(kLimitsUuid, "s", kMiB - 1, kMiB).message(),
              HasSubstr("below the 1 MiB"));
  EXPECT_THAT(ValidateShare(kLimitsUuid, "s", 3 * kMiB, 2 * kMiB).message(),
              HasSubstr("share s of 3 MiB is more than the 2 MiB it can share"));
}

}  // namespace
}  // namespace canhazgpu::mps
