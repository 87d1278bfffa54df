// Runs the real NvmlGpuProvider against the test libnvidia-ml.so built in
// tests/fake_nvml, which implements NVML's C ABI over a simulated host.
#include "gpu/nvml_gpu_provider.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gpu/nvml_library.h"

namespace canhazgpu::gpu {
namespace {

using ::testing::HasSubstr;

class NvmlGpuProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvml_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    host_ = dir_ + "/host.json";
    std::ofstream(host_) << R"({"driver_version": "560.35.03", "cuda_driver_version": "12.6",
      "gpus": [
        {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1111", "memory_total_mib": 81559,
         "pci_bus_id": "0000:1b:00.0", "architecture": "Hopper", "compute_capability": "9.0",
         "memory_reserved_mib": 1,
         "processes": [{"pid": 501, "used_memory_mib": 4096}, {"pid": 502, "used_memory_mib": 10}]},
        {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-2222", "memory_total_mib": 40960,
         "architecture": "Ampere", "compute_capability": "8.0", "mig_mode": "enabled"},
        {"name": "broken", "uuid": "GPU-3333", "memory_total_mib": 1, "error": "lost"}]})";
    setenv("FAKE_NVML_HOST", host_.c_str(), 1);
    unsetenv("FAKE_NVML_INIT_ERROR");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_, host_;
};

TEST_F(NvmlGpuProviderTest, ReportsAttributesMemoryAndProcesses) {
  auto provider = NvmlGpuProvider::Create(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto gpus = (*provider)->Query();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 3u);
  const GpuInfo& h100 = (*gpus)[0];
  EXPECT_EQ(h100.product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.uuid, "GPU-1111");
  EXPECT_EQ(h100.pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(h100.architecture, "Hopper");
  EXPECT_EQ(h100.compute_capability, "9.0");
  EXPECT_EQ(h100.driver_version, "560.35.03");
  EXPECT_EQ(h100.cuda_driver_version, "12.6");
  EXPECT_EQ(h100.mig_mode, MigMode::kDisabled);
  EXPECT_EQ(h100.memory_total_bytes, 81559 * kMiB);
  EXPECT_EQ(h100.memory_used_bytes, 4107 * kMiB);
  // pid 501 is in both the compute and the graphics list: counted once.
  ASSERT_EQ(h100.processes.size(), 2u);
  EXPECT_EQ(h100.processes[0].pid, 501);
  EXPECT_EQ(h100.processes[0].used_memory_bytes, 4096 * kMiB);
  EXPECT_EQ((*gpus)[1].mig_mode, MigMode::kEnabled);
  EXPECT_EQ((*gpus)[1].architecture, "Ampere");
  EXPECT_THAT((*gpus)[2].error, HasSubstr("GPU is lost"));
}

// MIG as the NVIDIA DRA driver reads it: MIG device handles per slot, their
// GPU instances' profile ids and placements, profile names from the profile
// info; the minor number; the PCIe root from where sysfs puts the device.
TEST_F(NvmlGpuProviderTest, ReportsMigInstancesMinorAndPcieRoot) {
  std::ofstream(host_) << R"({"gpus": [
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-h", "memory_total_mib": 81559,
       "pci_bus_id": "00000000:1B:00.0", "minor": 3, "mig_mode": "enabled",
       "mig_instances": [
         {"uuid": "MIG-a", "profile": "1g.10gb", "profile_id": 19, "placement_start": 6,
          "placement_size": 1, "memory_mib": 9856},
         {"uuid": "MIG-b", "profile": "3g.40gb", "profile_id": 9, "placement_start": 0,
          "placement_size": 4, "memory_mib": 40192},
         {"uuid": "MIG-c", "profile": "1g.10gb+me", "profile_id": 20, "placement_start": 4,
          "placement_size": 1, "memory_mib": 9856, "gpu_instance_id": 13,
          "compute_instance_id": 1}]},
      {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a", "memory_total_mib": 40960,
       "pci_bus_id": "00000000:AA:00.0", "mig_mode": "disabled"}]})";
  std::filesystem::path devices = std::filesystem::path(dir_) / "sys/bus/pci/devices";
  std::filesystem::create_directories(devices);
  std::filesystem::create_symlink("../../../devices/pci0000:17/0000:17:01.0/0000:1b:00.0",
                                  devices / "0000:1b:00.0");
  auto provider = NvmlGpuProvider::Create(FAKE_NVML_LIBRARY, dir_);
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto gpus = (*provider)->Query();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& h100 = (*gpus)[0];
  ASSERT_TRUE(h100.error.empty()) << h100.error;
  EXPECT_EQ(h100.minor, 3);
  EXPECT_EQ(h100.pcie_root, "pci0000:17");
  EXPECT_EQ(h100.mig_memory_slices, 8);
  ASSERT_EQ(h100.mig_instances.size(), 3u);
  const MigInstance& small = h100.mig_instances[0];
  EXPECT_EQ(small.uuid, "MIG-a");
  EXPECT_EQ(small.profile, "1g.10gb");
  EXPECT_EQ(small.profile_id, 19);
  EXPECT_EQ(small.placement_start, 6);
  EXPECT_EQ(small.placement_size, 1);
  EXPECT_EQ(small.memory_bytes, 9856 * kMiB);
  EXPECT_EQ(h100.mig_instances[1].profile, "3g.40gb");
  EXPECT_EQ(h100.mig_instances[1].placement_size, 4);
  EXPECT_EQ(h100.mig_instances[2].profile, "1g.10gb+me");
  // The ids that name the instances' capability nodes.
  EXPECT_EQ(small.gpu_instance_id, 1);
  EXPECT_EQ(small.compute_instance_id, 0);
  EXPECT_EQ(h100.mig_instances[1].gpu_instance_id, 2);
  EXPECT_EQ(h100.mig_instances[2].gpu_instance_id, 13);
  EXPECT_EQ(h100.mig_instances[2].compute_instance_id, 1);
  const GpuInfo& a100 = (*gpus)[1];
  EXPECT_EQ(a100.minor, 1) << "the simulated host's default minor is the index";
  EXPECT_EQ(a100.pcie_root, "") << "not in this sysfs";
  EXPECT_TRUE(a100.mig_instances.empty());
}

TEST_F(NvmlGpuProviderTest, SeesProcessesThatStartLater) {
  auto provider = NvmlGpuProvider::Create(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(provider.ok());
  std::ofstream(host_) << R"({"gpus": [{"name": "g", "uuid": "GPU-9", "memory_total_mib": 10,
      "processes": [{"pid": 1, "used_memory_mib": 1}, {"pid": 2, "used_memory_mib": 1},
                    {"pid": 3, "used_memory_mib": 1}]}]})";
  auto gpus = (*provider)->Query();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ((*gpus)[0].processes.size(), 3u);
}

TEST_F(NvmlGpuProviderTest, MissingLibraryIsAClearError) {
  auto provider = NvmlGpuProvider::Create("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(provider.ok());
  EXPECT_EQ(provider.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(provider.status().message()),
              HasSubstr("NVIDIA driver library not available"));
}

TEST_F(NvmlGpuProviderTest, LibraryWithoutNvmlSymbolsIsRejected) {
  auto provider = NvmlGpuProvider::Create("libc.so.6");
  ASSERT_FALSE(provider.ok());
  EXPECT_THAT(std::string(provider.status().message()), HasSubstr("lacks nvmlInit_v2"));
}

TEST_F(NvmlGpuProviderTest, RequiredFunctionsNameWhatIsMissing) {
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(lib.ok()) << lib.status();
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  EXPECT_TRUE((*lib)->Require("nvmlDeviceGetCount_v2", &count).ok());
  EXPECT_NE(count, nullptr);
  EXPECT_TRUE((*lib)->RequireAny({"nvmlDeviceGetCount_v9", "nvmlDeviceGetCount_v2"}, &count).ok());
  absl::Status missing = (*lib)->RequireAny({"nvmlDeviceGetCount_v9", "nvmlNoSuchThing"}, &count);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(missing.message(), std::string("NVIDIA library ") + FAKE_NVML_LIBRARY +
                                   " lacks nvmlDeviceGetCount_v9; the driver is too old");
}

TEST_F(NvmlGpuProviderTest, InitFailureIsReported) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  auto provider = NvmlGpuProvider::Create(FAKE_NVML_LIBRARY);
  ASSERT_FALSE(provider.ok());
  EXPECT_THAT(std::string(provider.status().message()), HasSubstr("Driver Not Loaded"));
}

}  // namespace
}  // namespace canhazgpu::gpu
