#include "cli/k8shazgpu/vllm_share.h"

#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

json SliceWith(const std::vector<std::pair<std::string, bool>>& devices) {
  json list = json::array();
  for (const auto& [memory, shared] : devices) {
    json d = {{"name", "gpu"}, {"capacity", {{"memory", {{"value", memory}}}}}};
    if (shared) d["allowMultipleAllocations"] = true;
    list.push_back(d);
  }
  return {{"spec", {{"devices", list}}}};
}

TEST(VllmShareTest, TheFlagIsSeenInEitherForm) {
  EXPECT_TRUE(GivesGpuMemoryUtilization({"vllm", "serve", "m", "--gpu-memory-utilization", "0.5"}));
  EXPECT_TRUE(GivesGpuMemoryUtilization({"vllm", "serve", "--gpu-memory-utilization=0.5"}));
  EXPECT_FALSE(GivesGpuMemoryUtilization({"vllm", "serve", "m", "--gpu-memory-util"}));
}

TEST(VllmShareTest, TheShareOfTheLargestSharedGpuRoundedDownLessOneHundredth) {
  const uint64_t gi = uint64_t{1} << 30;
  // 24Gi of 80Gi is 0.30: 0.29, so 0.29 x 80Gi stays inside the share
  // even where the device's total is a margin more than its capacity.
  EXPECT_EQ(ShareUtilization(24 * gi, {SliceWith({{"80Gi", true}, {"40Gi", true}})}), 0.29);
  // Whole GPUs only (not published for sharing) say nothing.
  EXPECT_EQ(ShareUtilization(24 * gi, {SliceWith({{"80Gi", false}})}), std::nullopt);
  EXPECT_EQ(ShareUtilization(24 * gi, {}), std::nullopt);
  // Bounds: a tiny share still gets 0.01; a share of all of it 0.99.
  EXPECT_EQ(ShareUtilization(1, {SliceWith({{"80Gi", true}})}), 0.01);
  EXPECT_EQ(ShareUtilization(80 * gi, {SliceWith({{"80Gi", true}})}), 0.99);
  // Odd shapes from the API server are skipped, not trusted.
  json odd = SliceWith({{"80Gi", true}});
  odd["spec"]["devices"].push_back(3);
  odd["spec"]["devices"][0]["allowMultipleAllocations"] = "yes";
  EXPECT_EQ(ShareUtilization(24 * gi, {json(1), odd, json{{"spec", {{"devices", 2}}}}}),
            std::nullopt);
  EXPECT_EQ(FormatUtilization(0.29), "0.29");
  EXPECT_EQ(FormatUtilization(0.05), "0.05");
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
