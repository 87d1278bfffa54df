// Isolation detection and dmem.max against a cgroup tree and a driver root
// made of real files in a temp directory.
#include "mps/isolation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace canhazgpu::mps {
namespace {

using ::testing::HasSubstr;

constexpr char kIsoUuid[] = "GPU-aaaaaaaa-0000-0000-0000-000000000001";
constexpr char kIsoBusId[] = "00000000:1B:00.0";

void WriteIsoText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string ReadIsoText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/isoXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    tmp_ = dir;
    probe_.driver_root = tmp_ + "/driver";
    probe_.cgroup_root = tmp_ + "/cgroup";
    probe_.cuda_driver_version = "13.4";
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  void InstallMps() {
    std::string program = probe_.driver_root + "/usr/bin/nvidia-cuda-mps-control";
    WriteIsoText(program, "#!/bin/sh\n");
    chmod(program.c_str(), 0755);
  }
  // A cgroup v2 root offering `controllers`, with two GPUs' and an Intel
  // GPU's regions (as the kernel and NVIDIA's driver name them).
  void MakeCgroupRoot(const std::string& controllers) {
    WriteIsoText(probe_.cgroup_root + "/cgroup.controllers", controllers + "\n");
    WriteIsoText(probe_.cgroup_root + "/dmem.capacity",
                 "drm/0000:03:00.0/vram0 8514437120\n"
                 "drm/0000:03:00.0/stolen 67108864\n"
                 "nvidia/0000:1b:00.0/vidmem 85899345920\n"
                 "nvidia/0000:1c:00.0/vidmem 85899345920\n");
  }

  std::string tmp_;
  IsolationProbe probe_;
};

TEST_F(IsolationTest, NamesRoundTrip) {
  for (MemoryIsolation i :
       {MemoryIsolation::kNone, MemoryIsolation::kMps, MemoryIsolation::kMpsDmem}) {
    EXPECT_EQ(ParseMemoryIsolation(MemoryIsolationName(i)), i);
  }
  EXPECT_EQ(MemoryIsolationName(MemoryIsolation::kMpsDmem), "mps-dmem");
  EXPECT_EQ(ParseMemoryIsolation("hami"), std::nullopt);
}

TEST_F(IsolationTest, CudaVersionsCompareAsNumbers) {
  EXPECT_TRUE(CudaVersionAtLeast("13.4", 13, 4));
  EXPECT_TRUE(CudaVersionAtLeast("13.10", 13, 4));
  EXPECT_TRUE(CudaVersionAtLeast("14.0", 13, 4));
  EXPECT_FALSE(CudaVersionAtLeast("13.3", 13, 4));
  EXPECT_FALSE(CudaVersionAtLeast("12.9", 13, 4));
  EXPECT_FALSE(CudaVersionAtLeast("", 13, 4));
  EXPECT_FALSE(CudaVersionAtLeast("thirteen", 13, 4));
}

TEST_F(IsolationTest, NoMpsProgramIsNone) {
  MakeCgroupRoot("cpu memory dmem");
  EXPECT_EQ(DetectIsolation(probe_, kIsoBusId), MemoryIsolation::kNone);
}

TEST_F(IsolationTest, MpsWithoutTheDmemControllerIsMps) {
  InstallMps();
  MakeCgroupRoot("cpuset cpu io memory pids");
  EXPECT_EQ(DetectIsolation(probe_, kIsoBusId), MemoryIsolation::kMps);
}

TEST_F(IsolationTest, DmemAndCuda134AndTheGpusRegionIsMpsDmem) {
  InstallMps();
  MakeCgroupRoot("cpu io memory pids dmem");
  EXPECT_EQ(DetectIsolation(probe_, kIsoBusId), MemoryIsolation::kMpsDmem);
  probe_.cuda_driver_version = "13.3";  // before MPS v3 memory partitioning
  EXPECT_EQ(DetectIsolation(probe_, kIsoBusId), MemoryIsolation::kMps);
  probe_.cuda_driver_version = "13.4";
  // A GPU the dmem controller does not know (no region) gets MPS alone.
  EXPECT_EQ(DetectIsolation(probe_, "00000000:99:00.0"), MemoryIsolation::kMps);
}

TEST_F(IsolationTest, NoCgroupV2IsNoDmem) {
  InstallMps();  // and no cgroup.controllers: cgroup v1, or nothing mounted
  EXPECT_FALSE(HasDmemController(probe_.cgroup_root));
  EXPECT_EQ(DetectIsolation(probe_, kIsoBusId), MemoryIsolation::kMps);
}

TEST_F(IsolationTest, RegionIsFoundByPciAddressWhateverItsForm) {
  MakeCgroupRoot("dmem");
  EXPECT_EQ(*DmemRegion(probe_.cgroup_root, kIsoUuid, kIsoBusId), "nvidia/0000:1b:00.0/vidmem");
  EXPECT_EQ(*DmemRegion(probe_.cgroup_root, kIsoUuid, "0000:1c:00.0"),
            "nvidia/0000:1c:00.0/vidmem");
  // Several regions of one device and none named vidmem: the largest.
  EXPECT_EQ(*DmemRegion(probe_.cgroup_root, kIsoUuid, "0000:03:00.0"), "drm/0000:03:00.0/vram0");
  absl::StatusOr<std::string> missing = DmemRegion(probe_.cgroup_root, kIsoUuid, "0000:99:00.0");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      missing.status().message(),
      HasSubstr(std::string("gpu ") + kIsoUuid + ": no dmem region for PCI address 0000:99:00.0"));
}

TEST_F(IsolationTest, DmemMaxGetsTheSharesHardLimitForTheGpusRegion) {
  MakeCgroupRoot("dmem");
  const std::string job = probe_.cgroup_root + "/canhazgpu-job-41-7731";
  WriteIsoText(job + "/dmem.max",
               "nvidia/0000:1b:00.0/vidmem max\nnvidia/0000:1c:00.0/vidmem max\n");
  ASSERT_TRUE(WriteDmemMax(probe_.cgroup_root, job, kIsoUuid, kIsoBusId, 10737418240).ok());
  // One line, the GPU's region only: the kernel keeps the other regions'
  // limits (this plain file just holds what was written).
  EXPECT_EQ(ReadIsoText(job + "/dmem.max"), "nvidia/0000:1b:00.0/vidmem 10737418240\n");
}

TEST_F(IsolationTest, DmemMaxWithoutTheControllerInTheCgroupFailsNamingTheGpu) {
  MakeCgroupRoot("dmem");
  const std::string job = probe_.cgroup_root + "/canhazgpu-job-41-7731";
  std::filesystem::create_directories(job);
  absl::Status status = WriteDmemMax(probe_.cgroup_root, job, kIsoUuid, kIsoBusId, 1 << 30);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr(std::string("gpu ") + kIsoUuid + ": " + job + "/dmem.max"));
  EXPECT_FALSE(std::filesystem::exists(job + "/dmem.max"));  // never created by us
  absl::Status no_region = WriteDmemMax(probe_.cgroup_root, job, kIsoUuid, "0000:99:00.0", 1 << 30);
  EXPECT_EQ(no_region.code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace canhazgpu::mps
