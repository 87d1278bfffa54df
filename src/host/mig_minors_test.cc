#include "host/mig_minors.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// As the driver writes it (nvidia-caps), abridged.
constexpr char kMinors[] = R"(config 1
monitor 2
gpu0/gi0/access 3
gpu0/gi0/ci0/access 4
gpu0/gi1/access 12
gpu0/gi1/ci0/access 13
gpu3/gi2/access 300
gpu3/gi2/ci0/access 301
gpu3/gi2/ci1/access 302
not a line
gpu3/gi9/access x
)";

TEST(MigMinorsTest, NamesTheInstancesCapabilityNodes) {
  const MigMinors minors = MigMinors::Parse(kMinors);
  EXPECT_THAT(minors.CapabilityNodes(0, 1, 0).value(),
              ElementsAre("/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"));
  EXPECT_THAT(minors.CapabilityNodes(3, 2, 1).value(),
              ElementsAre("/dev/nvidia-caps/nvidia-cap300", "/dev/nvidia-caps/nvidia-cap302"));
  absl::StatusOr<std::vector<std::string>> gone = minors.CapabilityNodes(3, 9, 0);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gone.status().message(), HasSubstr("has no gpu3/gi9/access"));
  EXPECT_FALSE(minors.CapabilityNodes(3, 2, 5).ok());
}

TEST(MigMinorsTest, ReadsTheFileAndSaysWhichIsMissing) {
  const std::string path = ::testing::TempDir() + "/mig-minors";
  std::ofstream(path) << kMinors;
  absl::StatusOr<MigMinors> minors = MigMinors::Read(path);
  ASSERT_TRUE(minors.ok()) << minors.status();
  EXPECT_THAT(minors->CapabilityNodes(1, 1, 0).status().message(),
              HasSubstr(path + " has no gpu1/gi1/access"));
  EXPECT_EQ(MigMinors::Read(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace canhazgpu::host
