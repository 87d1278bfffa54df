// The cluster's block of pod addresses: distinct loopback addresses, never
// 127.0.0.1, freed ones not given again at once, and an end.
#include "simkubelet/pod_addresses.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::simkubelet {
namespace {

constexpr uint32_t kBlock = (127u << 24) | (42u << 16) | (16u << 8);  // 127.42.16.0/20

TEST(PodAddressBlockTest, GivesDistinctAddressesOfTheBlockInOrder) {
  PodAddressBlock block(kBlock);
  EXPECT_EQ(block.cidr(), "127.42.16.0/20");
  EXPECT_EQ(block.Allocate(), "127.42.16.1");  // .0 only looks like a network
  EXPECT_EQ(block.Allocate(), "127.42.16.2");
  EXPECT_EQ(block.taken(), 2u);
}

TEST(PodAddressBlockTest, AFreedAddressComesBackOnlyAfterTheOthers) {
  PodAddressBlock block(kBlock);
  const std::string first = *block.Allocate();
  block.Release(first);
  EXPECT_EQ(block.taken(), 0u);
  EXPECT_EQ(block.Allocate(), "127.42.16.2");
  block.Release("10.0.0.1");   // not the block's: ignored
  block.Release("not an ip");  // ignored
  EXPECT_EQ(block.taken(), 1u);
}

TEST(PodAddressBlockTest, SkipsTheEndsOfEachHundredAndRunsOut) {
  PodAddressBlock block(kBlock);
  std::set<std::string> given;
  while (std::optional<std::string> ip = block.Allocate()) {
    EXPECT_FALSE(ip->ends_with(".0") || ip->ends_with(".255")) << *ip;
    EXPECT_TRUE(ip->starts_with("127.42.")) << *ip;
    given.insert(*ip);
  }
  EXPECT_EQ(given.size(), 16u * 254u);  // 16 third octets of 254 each
  EXPECT_EQ(given.count("127.42.16.254"), 1u);
  EXPECT_EQ(given.count("127.42.31.254"), 1u);
  EXPECT_EQ(given.count("127.42.32.1"), 0u);
  block.Release("127.42.20.7");
  EXPECT_EQ(block.Allocate(), "127.42.20.7");
  EXPECT_EQ(block.Allocate(), std::nullopt);
}

TEST(PodAddressBlockTest, BlocksAreAlignedLoopbackOutsideTheMachinesOwn) {
  EXPECT_TRUE(PodAddressBlock::IsBlockStart(kBlock));
  EXPECT_FALSE(PodAddressBlock::IsBlockStart((127u << 24) | 1));  // 127.0.0.1
  EXPECT_FALSE(PodAddressBlock::IsBlockStart(127u << 24));        // 127.0.0.0: the machine's
  EXPECT_FALSE(PodAddressBlock::IsBlockStart((127u << 24) | (255u << 16)));  // 127.255.x
  EXPECT_FALSE(PodAddressBlock::IsBlockStart(kBlock + 256));                 // not aligned
  EXPECT_FALSE(PodAddressBlock::IsBlockStart((10u << 24) | (42u << 16)));    // not loopback
  for (int i = 0; i < 1000; ++i) {
    const uint32_t start = PodAddressBlock::RandomBlockStart();
    ASSERT_TRUE(PodAddressBlock::IsBlockStart(start)) << FormatIpv4(start);
  }
}

}  // namespace
}  // namespace canhazgpu::simkubelet
