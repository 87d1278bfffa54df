// The cluster's defaults ConfigMap as the CLI reads it: empty keys are
// unset, values no object could use are one line naming the key.
#include "cli/k8shazgpu/cluster_defaults.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Defaults(json data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", kDefaultsConfigMap}, {"namespace", kDefaultsNamespace}}},
          {"data", std::move(data)}};
}

TEST(ClusterDefaultsTest, EmptyKeysAreUnsetAndValuesAreTrimmed) {
  absl::StatusOr<ClusterDefaults> none =
      ParseClusterDefaults(Defaults({{"image", ""}, {"deviceClass", ""}, {"namespace", ""}}));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->image, "");
  EXPECT_EQ(none->device_class, "");
  EXPECT_EQ(none->namespace_name, "");
  absl::StatusOr<ClusterDefaults> set =
      ParseClusterDefaults(Defaults({{"image", " nvcr.io/nvidia/pytorch:25.01-py3\n"},
                                     {"deviceClass", "gpu.nvidia.com"},
                                     {"namespace", "team-a"},
                                     {"unknown", "ignored"}}));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->image, "nvcr.io/nvidia/pytorch:25.01-py3");
  EXPECT_EQ(set->device_class, "gpu.nvidia.com");
  EXPECT_EQ(set->namespace_name, "team-a");
  EXPECT_TRUE(ParseClusterDefaults(json::object()).ok()) << "no data at all";
}

TEST(ClusterDefaultsTest, AValueNoObjectCouldUseIsOneLineNamingTheKey) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"image", "two words"}}, "image 'two words' is not an image reference"},
      {{{"deviceClass", "GPU_Class"}}, "deviceClass 'GPU_Class' is not a DeviceClass name"},
      {{{"namespace", "-team"}}, "namespace '-team' is not a namespace name"},
  };
  for (const auto& [data, says] : cases) {
    absl::StatusOr<ClusterDefaults> d = ParseClusterDefaults(Defaults(data));
    ASSERT_FALSE(d.ok()) << data.dump();
    EXPECT_TRUE(absl::IsInvalidArgument(d.status()));
    EXPECT_THAT(d.status().message(), HasSubstr("configmap canhazgpu-system/k8shazgpu-defaults: "));
    EXPECT_THAT(d.status().message(), HasSubstr(says));
  }
}

}  // namespace
}  // namespace canhazgpu::cli::k8s
