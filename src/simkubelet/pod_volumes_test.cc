// The pure and file-system parts of pod volumes: which ConfigMap keys become
// which files, a container's mounts, argv[0] from the node root. The
// kubelet's use of them is in kubelet_test.cc.
#include "simkubelet/pod_volumes.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::simkubelet {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string Base64(const std::string& bytes) {
  std::string out;
  absl::Base64Escape(bytes, &out);
  return out;
}

const std::string kBinary("\x00\xff\x01 bytes\n", 10);

json ConfigMap() {
  return {{"metadata", {{"name", "cm"}}},
          {"data", {{"a.txt", "alpha"}}},
          {"binaryData", {{"part", Base64(kBinary)}}}};
}

TEST(ConfigMapFilesTest, WithoutItemsEveryKeyIsAFileWithTheDefaultMode) {
  auto files = ConfigMapFiles({{"name", "cm"}}, ConfigMap(), 0600);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "a.txt");
  EXPECT_EQ((*files)[0].bytes, "alpha");
  EXPECT_EQ((*files)[0].mode, 0600u);
  EXPECT_EQ((*files)[1].path, "part");
  EXPECT_EQ((*files)[1].bytes, kBinary);  // decoded, NUL and 0xFF included
}

TEST(ConfigMapFilesTest, ItemsChooseKeysPathsAndModes) {
  const json source = {{"name", "cm"},
                       {"items", {{{"key", "part"}, {"path", "changes/part-0"}, {"mode", 0400}}}}};
  auto files = ConfigMapFiles(source, ConfigMap(), 0644);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].path, "changes/part-0");
  EXPECT_EQ((*files)[0].bytes, kBinary);
  EXPECT_EQ((*files)[0].mode, 0400u);
}

TEST(ConfigMapFilesTest, MissingConfigMapOrKeyIsAnErrorUnlessOptional) {
  auto missing = ConfigMapFiles({{"name", "cm"}}, json(), 0644);
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(), "configmap \"cm\" not found");
  auto optional = ConfigMapFiles({{"name", "cm"}, {"optional", true}}, json(), 0644);
  ASSERT_TRUE(optional.ok());
  EXPECT_TRUE(optional->empty());

  const json items = {{{"key", "nope"}, {"path", "x"}}};
  auto no_key = ConfigMapFiles({{"name", "cm"}, {"items", items}}, ConfigMap(), 0644);
  EXPECT_EQ(no_key.status().message(), "configmap references non-existent config key: nope");
  auto skipped =
      ConfigMapFiles({{"name", "cm"}, {"items", items}, {"optional", true}}, ConfigMap(), 0644);
  ASSERT_TRUE(skipped.ok());
  EXPECT_TRUE(skipped->empty());
}

TEST(ConfigMapFilesTest, PathsMayNotLeaveTheVolumeAndBinaryDataMustBeBase64) {
  for (const char* path : {"/etc/passwd", "../up", "a/../../b"}) {
    const json items = {{{"key", "a.txt"}, {"path", path}}};
    auto files = ConfigMapFiles({{"name", "cm"}, {"items", items}}, ConfigMap(), 0644);
    EXPECT_TRUE(absl::IsInvalidArgument(files.status())) << path;
  }
  json bad = ConfigMap();
  bad["binaryData"]["part"] = "not base64!";
  EXPECT_THAT(ConfigMapFiles({{"name", "cm"}}, bad, 0644).status().message(),
              HasSubstr("binaryData key part is not base64"));
}

class VolumeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pod_volumes_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/volumes/scratch");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(VolumeFilesTest, MountsMapMountPathsToVolumesAndCreateSubPaths) {
  const VolumePaths volumes = {{"scratch", dir_ + "/volumes/scratch"}};
  const json container = {{"volumeMounts",
                           {{{"name", "scratch"}, {"mountPath", "/scratch"}},
                            {{"name", "scratch"}, {"mountPath", "/data"}, {"subPath", "d/e"}}}}};
  auto mounts = ContainerMounts(container, volumes);
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  ASSERT_EQ(mounts->size(), 2u);
  EXPECT_EQ((*mounts)[0].mount_path, "/scratch");
  EXPECT_EQ((*mounts)[0].host_path, dir_ + "/volumes/scratch");
  EXPECT_EQ((*mounts)[1].host_path, dir_ + "/volumes/scratch/d/e");
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/volumes/scratch/d/e"));

  const json unknown = {{"volumeMounts", {{{"name", "nope"}, {"mountPath", "/x"}}}}};
  EXPECT_THAT(ContainerMounts(unknown, volumes).status().message(),
              HasSubstr("volumeMount nope: the pod has no volume of that name"));
}

TEST_F(VolumeFilesTest, AbsoluteArgv0ComesFromTheNodeRootWhenItIsThere) {
  std::filesystem::create_directories(dir_ + "/root/usr/local/bin");
  std::ofstream(dir_ + "/root/usr/local/bin/k8shazgpu") << "#!/bin/sh\n";
  const std::string root = dir_ + "/root";
  EXPECT_EQ(ResolveFromNodeRoot(root, "/usr/local/bin/k8shazgpu"),
            root + "/usr/local/bin/k8shazgpu");
  EXPECT_EQ(ResolveFromNodeRoot(root, "/bin/sh"), "/bin/sh");
  EXPECT_EQ(ResolveFromNodeRoot(root, "sh"), "sh");
  EXPECT_EQ(ResolveFromNodeRoot("", "/usr/local/bin/k8shazgpu"), "/usr/local/bin/k8shazgpu");
}

}  // namespace
}  // namespace canhazgpu::simkubelet
