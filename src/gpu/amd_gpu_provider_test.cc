#include "gpu/amd_gpu_provider.h"

#include <gtest/gtest.h>

namespace canhazgpu::gpu {
namespace {

TEST(AmdGpuProviderTest, ReadsCardsVramAndKfdProcesses) {
  AmdGpuProvider provider(AMD_FIXTURE_ROOT);
  EXPECT_TRUE(provider.HasDevices());
  auto gpus = provider.Query();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  // card2 is an Intel GPU and card0-DP-1 a connector: both skipped.
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& g0 = (*gpus)[0];
  EXPECT_EQ(g0.index, 0);
  EXPECT_EQ(g0.product_name, "AMD Instinct MI300X");
  EXPECT_EQ(g0.brand, "AMD");
  EXPECT_EQ(g0.uuid, "GPU-a1b2c3d4e5f60718");
  EXPECT_EQ(g0.pci_bus_id, "0000:0c:00.0");
  EXPECT_EQ(g0.architecture, "gfx942");
  EXPECT_EQ(g0.driver_version, "6.8.5");
  EXPECT_EQ(g0.memory_total_bytes, 205822885888u);
  EXPECT_EQ(g0.memory_used_bytes, 5368709120u);
  ASSERT_EQ(g0.processes.size(), 2u);
  EXPECT_EQ(g0.processes[0].pid, 4242);
  EXPECT_EQ(g0.processes[0].used_memory_bytes, 4294967296u);
  EXPECT_EQ(g0.processes[1].pid, 4343);

  const GpuInfo& g1 = (*gpus)[1];
  EXPECT_EQ(g1.uuid, "GPU-0000:22:00.0") << "no unique_id: falls back to the PCI slot";
  ASSERT_EQ(g1.processes.size(), 1u);
  EXPECT_EQ(g1.processes[0].used_memory_bytes, 0u);
}

TEST(AmdGpuProviderTest, EmptyRootHasNoDevices) {
  AmdGpuProvider provider("/nonexistent-root");
  EXPECT_FALSE(provider.HasDevices());
  auto gpus = provider.Query();
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(gpus->empty());
}

}  // namespace
}  // namespace canhazgpu::gpu
