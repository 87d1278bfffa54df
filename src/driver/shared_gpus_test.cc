#include "driver/shared_gpus.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dra/test_pools.h"
#include "driver/withheld.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kMiBytes = static_cast<int64_t>(kMiB);
constexpr int64_t kGiBytes = 1024 * kMiBytes;

// A driver root with an (empty, executable) MPS control program: the probe
// only looks for it.
std::string DriverRootWithMps() {
  const std::string root = ::testing::TempDir() + "/shared_gpus_root_" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/usr/bin");
  const std::string program = root + "/usr/bin/nvidia-cuda-mps-control";
  std::ofstream(program) << "#!/bin/sh\n";
  chmod(program.c_str(), 0755);
  return root;
}

Reservation Share(int gpu, uint64_t gib, ReservationKind kind, const std::string& id) {
  return Reservation{.gpu = gpu,
                     .memory = gib << 30,
                     .share = id,
                     .shareable = 40448 * kMiB,
                     .user = "alice",
                     .kind = kind};
}

alloc::GpuStatus SharedStatus(int gpu, std::vector<Reservation> shares) {
  alloc::GpuStatus s{.gpu = gpu, .state = alloc::GpuState::kInUse};
  s.reservation = shares.front();
  s.shares = std::move(shares);
  return s;
}

TEST(SharedGpusTest, OffPublishesEveryGpuForExclusiveUse) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0)};
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor({}))};
  ApplySharing(node, gpus, {}, {});
  const dra::DevicePool& pool = node.pool;
  EXPECT_THAT(node.shared, IsEmpty());
  EXPECT_FALSE(pool.devices[0].allow_multiple_allocations);
  EXPECT_FALSE(pool.devices[0].attributes.contains(dra::kMemoryIsolationAttribute));
}

TEST(SharedGpusTest, FullGpusAreSharedWithDetectedIsolationMigNever) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0), dra::testing::TestMigGpu(1)};
  const SharingOptions with_mps{
      .enabled = true, .reserved_bytes = 1024 * kMiBytes, .driver_root = DriverRootWithMps()};
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(with_mps))};
  ApplySharing(node, gpus, {}, with_mps);
  EXPECT_THAT(node.withheld, IsEmpty());
  EXPECT_EQ(node.shared.at("gpu-0").shareable, uint64_t{39} << 30);
  EXPECT_EQ(node.shared.at("gpu-0").total, uint64_t{40} << 30);
  EXPECT_EQ(node.shared.size(), 1u);
  for (const dra::Device& d : node.pool.devices) {
    if (d.name == "gpu-0") {
      EXPECT_TRUE(d.allow_multiple_allocations);
      EXPECT_EQ(d.capacity.at("memory"), 39 * kGiBytes);  // 40 GiB less the 1 GiB reserved
      EXPECT_EQ(d.StringAttribute(dra::kMemoryIsolationAttribute), "mps");
    } else {
      EXPECT_FALSE(d.allow_multiple_allocations) << d.name;
    }
  }
  // Without the MPS control program a share is booked, not enforced.
  const SharingOptions without{.enabled = true, .driver_root = "/nonexistent-driver-root"};
  node = NodeDevices{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(without))};
  ApplySharing(node, gpus, {}, without);
  EXPECT_EQ(node.pool.devices[0].StringAttribute(dra::kMemoryIsolationAttribute), "none");
}

// A cgroup v2 root that offers dmem with the region of TestGpu(0)
// (0000:10:00.0) and nothing for TestGpu(1).
std::string CgroupRootWithDmem() {
  const std::string root = ::testing::TempDir() + "/shared_gpus_cg_" + std::to_string(getpid());
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpu memory pids dmem\n";
  std::ofstream(root + "/dmem.capacity") << "nvidia/0000:10:00.0/vidmem 42949672960\n";
  return root;
}

TEST(SharedGpusTest, APodIsNeverToldDmemTheNodeDoesNotApply) {
  std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0), dra::testing::TestGpu(1)};
  for (GpuInfo& g : gpus) g.cuda_driver_version = "13.4";  // MPS v3 memory partitioning
  const SharingOptions dmem{
      .enabled = true, .driver_root = DriverRootWithMps(), .cgroup_root = CgroupRootWithDmem()};
  // The host offers mps-dmem for gpu-0: a local `canhazgpu run` gets it.
  ASSERT_EQ(mps::DetectIsolation({.driver_root = dmem.driver_root,
                                  .cgroup_root = dmem.cgroup_root,
                                  .cuda_driver_version = "13.4"},
                                 gpus[0].pci_bus_id),
            mps::MemoryIsolation::kMpsDmem);
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(dmem))};
  ApplySharing(node, gpus, {}, dmem);
  // A pod's share: MPS's limits only, published and marked as such.
  EXPECT_EQ(node.pool.devices[0].StringAttribute(dra::kMemoryIsolationAttribute), "mps");
  EXPECT_TRUE(node.shared.at("gpu-0").dmem_not_applied);
  // gpu-1 has no dmem region: mps as detected, nothing held back.
  EXPECT_EQ(node.pool.devices[1].StringAttribute(dra::kMemoryIsolationAttribute), "mps");
  EXPECT_FALSE(node.shared.at("gpu-1").dmem_not_applied);
  EXPECT_EQ(PodShareIsolationName("mps-dmem"), "mps");
  EXPECT_EQ(PodShareIsolationName("mps"), "mps");
  EXPECT_EQ(PodShareIsolationName("none"), "none");
  EXPECT_EQ(PodShareIsolationName("something-new"), "none");
}

TEST(SharedGpusTest, LocalSharesComeOffThePublishedMemoryPodSharesDoNot) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0), dra::testing::TestGpu(1)};
  const SharingOptions on{.enabled = true};
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(on))};
  const dra::DevicePool& pool = node.pool;
  const std::vector<alloc::GpuStatus> statuses = {
      SharedStatus(
          0, {Share(0, 10, ReservationKind::kManual, "a"), Share(0, 5, ReservationKind::kK8s, "b"),
              Share(0, 2, ReservationKind::kRun, "c")}),
      SharedStatus(1, {Share(1, 20, ReservationKind::kK8s, "d")})};
  EXPECT_EQ(LocalShareBytes(statuses, 0), uint64_t{12} << 30);
  ApplySharing(node, gpus, statuses, on);
  EXPECT_THAT(node.withheld, IsEmpty());
  const int64_t shareable = 40448 * kMiBytes;  // 40 GiB less 512 MiB
  const dra::Device& gpu0 = pool.devices[0];
  EXPECT_EQ(gpu0.capacity.at("memory"), shareable - 12 * kGiBytes);
  EXPECT_EQ(gpu0.request_policies.at("memory").default_value, shareable - 12 * kGiBytes);
  EXPECT_EQ(gpu0.request_policies.at("memory").range_max, shareable - 12 * kGiBytes);
  EXPECT_EQ(pool.devices[1].capacity.at("memory"), shareable);
  // Both stay published: shares only.
  EXPECT_THAT(WithheldDevices(pool, statuses, /*sharing=*/true), IsEmpty());
  // Not sharing: a local share holds the GPU as a reservation always did.
  EXPECT_THAT(WithheldDevices(pool, statuses, /*sharing=*/false), ElementsAre("gpu-0"));
}

// Memory the host's queue keeps for a waiting local share comes off the
// published memory as the local shares' does.
TEST(SharedGpusTest, MemoryKeptForAWaitingLocalShareIsNotPublished) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0)};
  const SharingOptions on{.enabled = true};
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(on))};
  const std::vector<alloc::GpuStatus> statuses = {
      SharedStatus(0, {Share(0, 10, ReservationKind::kK8s, "pod")})};
  const std::map<int, std::vector<QueueKeep>> kept = {
      {0, {QueueKeep{.user = "bob", .memory = uint64_t{20} << 30}}}};
  ApplySharing(node, gpus, statuses, on, kept);
  const int64_t left = 40448 * kMiBytes - 20 * kGiBytes;
  EXPECT_EQ(node.pool.devices[0].capacity.at("memory"), left);
  EXPECT_EQ(node.pool.devices[0].request_policies.at("memory").range_max, left);
  EXPECT_THAT(node.withheld, IsEmpty());
}

TEST(SharedGpusTest, AGpuLocalSharesFillIsNotPublished) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0)};
  const SharingOptions on{.enabled = true};
  NodeDevices node{.pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor(on))};
  Reservation all = Share(0, 0, ReservationKind::kManual, "a");
  all.memory = 40448 * kMiB;
  ApplySharing(node, gpus, {SharedStatus(0, {all})}, on);
  EXPECT_THAT(node.withheld, ElementsAre("gpu-0"));
}

TEST(SharedGpusTest, AWholeLocalReservationStillWithholdsTheGpu) {
  const std::vector<GpuInfo> gpus = {dra::testing::TestGpu(0)};
  const dra::DevicePool pool = dra::BuildDevicePool(gpus, "n", PoolOptionsFor({.enabled = true}));
  alloc::GpuStatus whole{.gpu = 0, .state = alloc::GpuState::kInUse};
  whole.reservation = Reservation{.gpu = 0, .user = "bob", .kind = ReservationKind::kManual};
  EXPECT_THAT(WithheldDevices(pool, {whole}, /*sharing=*/true), ElementsAre("gpu-0"));
}

}  // namespace
}  // namespace canhazgpu::driver
