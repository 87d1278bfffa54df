// `canhazgpu devices`: the host's GPUs and MIG instances as a
// resource.k8s.io/v1 ResourceSlice, from a simulated host with MIG.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kMigHost[] =
    R"({"driver_version": "550.54.15", "cuda_driver_version": "12.4", "gpus": [
  {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a", "memory_total_mib": 40960, "compute_capability": "8.0",
   "pcie_root": "pci0000:00", "mig_mode": "enabled", "mig_instances": [
     {"uuid": "MIG-1", "profile": "1g.5gb", "profile_id": 19, "placement_start": 0, "placement_size": 1, "memory_mib": 4864},
     {"uuid": "MIG-2", "profile": "3g.20gb", "profile_id": 9, "placement_start": 4, "placement_size": 4, "memory_mib": 19968}]},
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b", "memory_total_mib": 81920, "compute_capability": "9.0"}]})";

class CliDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mkdir((host_.dir() + "/state").c_str(), 0755);
    WriteFile(host_.fake_host(), kMigHost);
    CliResult admin = host_.Run({"admin", "--provider", "fake"});
    ASSERT_EQ(admin.exit_code, 0) << admin.err;
  }
  CliHost host_;
};

TEST_F(CliDevicesTest, TableListsGpusAndMigInstances) {
  CliResult r = host_.Run({"devices"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("gpu-0-mig-1g5gb-19-0"));
  EXPECT_THAT(r.out, HasSubstr("gpu-0-mig-3g20gb-9-4"));
  EXPECT_THAT(r.out, HasSubstr("80Gi"));
}

TEST_F(CliDevicesTest, JsonIsAResourceSliceWithPartitionableCounters) {
  CliResult r = host_.Run({"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto slice = nlohmann::json::parse(r.out);
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  const auto& devices = slice["spec"]["devices"];
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0]["attributes"]["type"]["string"], "gpu");
  EXPECT_EQ(devices[0]["attributes"]["resource.kubernetes.io/pcieRoot"]["string"], "pci0000:00");
  EXPECT_EQ(devices[1]["attributes"]["parentUUID"]["string"], "GPU-a");
  EXPECT_EQ(devices[1]["capacity"]["memory"]["value"], "4864Mi");
  EXPECT_EQ(devices[2]["consumesCounters"][0]["counters"].size(), 5u);  // memory + 4 slices
  EXPECT_EQ(devices[3]["attributes"]["cudaComputeCapability"]["version"], "9.0.0");
  EXPECT_EQ(slice["spec"]["sharedCounters"].size(), 1u);
}

TEST_F(CliDevicesTest, YamlAndBadFormat) {
  CliResult yaml = host_.Run({"devices", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("apiVersion: \"resource.k8s.io/v1\""));
  EXPECT_THAT(yaml.out, HasSubstr("name: \"gpu-1\""));
  CliResult both = host_.Run({"devices", "--json", "-o", "yaml"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("choose one"));
  CliResult bad = host_.Run({"devices", "-o", "xml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("expected table, json or yaml"));
}

// The same host read through NVML (the test libnvidia-ml.so: MIG device
// handles, GPU instances, profiles, minor numbers) and sysfs (the PCIe root)
// publishes exactly the devices the simulated host does.
TEST_F(CliDevicesTest, NvidiaProviderPublishesTheSameDevices) {
  CliResult fake = host_.Run({"devices", "--json"});
  ASSERT_EQ(fake.exit_code, 0) << fake.err;
  std::string sysfs = host_.dir() + "/sysfs";
  std::filesystem::create_directories(sysfs + "/sys/bus/pci/devices");
  std::filesystem::create_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                  sysfs + "/sys/bus/pci/devices/0000:01:00.0");
  CliHost nvidia;
  nvidia.env()["CANHAZGPU_NVML_LIBRARY"] = FAKE_NVML_LIBRARY;
  nvidia.env()["FAKE_NVML_HOST"] = host_.fake_host();
  nvidia.env()["CANHAZGPU_SYSFS_ROOT"] = sysfs;
  CliResult admin = nvidia.Run({"admin"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  CliResult r = nvidia.Run({"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json want = nlohmann::json::parse(fake.out), got = nlohmann::json::parse(r.out);
  EXPECT_EQ(got["spec"]["devices"].size(), 4u);
  EXPECT_EQ(got["spec"]["devices"], want["spec"]["devices"]);
  EXPECT_EQ(got["spec"]["sharedCounters"], want["spec"]["sharedCounters"]);
}

TEST_F(CliDevicesTest, MigPlacementBeyondTheSlicesIsRejected) {
  std::string host = kMigHost;
  host.replace(host.find("\"placement_size\": 4"), 19, "\"placement_size\": 5");
  WriteFile(host_.fake_host(), host);
  CliResult r = host_.Run({"devices"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("do not fit the GPU's 8 memory slices"));
}

TEST_F(CliDevicesTest, OverlappingMigPlacementsAreRejected) {
  std::string host = kMigHost;
  host.replace(host.find("\"placement_start\": 4"), 20, "\"placement_start\": 0");
  WriteFile(host_.fake_host(), host);
  CliResult r = host_.Run({"devices"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err, HasSubstr("overlaps memory slice 0"));
}

}  // namespace
}  // namespace canhazgpu::testing
