// The path rewriting that stands in for a container's mount namespace.
#include "simkubelet/mount_paths.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace canhazgpu::simkubelet {
namespace {

const std::vector<MountPoint> kMounts = {
    {.mount_path = "/cache", .host_path = "/n/v/cache"},
    {.mount_path = "/cache/hf/", .host_path = "/n/v/hf"},
    {.mount_path = "/workspace", .host_path = "/n/v/workspace"},
};

std::string Rewrite(const std::string& text) { return RewriteMountPaths(text, kMounts); }

TEST(MountPathsTest, AWholeWordAndDeeperPathsAreRewritten) {
  EXPECT_EQ(Rewrite("/workspace"), "/n/v/workspace");
  EXPECT_EQ(Rewrite("/workspace/vllm/setup.py"), "/n/v/workspace/vllm/setup.py");
  EXPECT_EQ(Rewrite("/cache/git/vllm.git"), "/n/v/cache/git/vllm.git");
}

TEST(MountPathsTest, TheLongestMountPathWins) {
  EXPECT_EQ(Rewrite("/cache/hf"), "/n/v/hf");
  EXPECT_EQ(Rewrite("/cache/hf/hub"), "/n/v/hf/hub");
  EXPECT_EQ(Rewrite("/cache/hfx"), "/n/v/cache/hfx");
}

TEST(MountPathsTest, PathsInsideScriptsAndAssignmentsAreRewritten) {
  EXPECT_EQ(Rewrite("cd '/workspace'/vllm/. && ls"), "cd '/n/v/workspace'/vllm/. && ls");
  EXPECT_EQ(Rewrite("cd \"/workspace\"; ls /cache"), "cd \"/n/v/workspace\"; ls /n/v/cache");
  EXPECT_EQ(Rewrite("cd /workspace;ls"), "cd /n/v/workspace;ls");
  EXPECT_EQ(Rewrite("--to=/workspace"), "--to=/n/v/workspace");
  EXPECT_EQ(Rewrite("/bin:/cache/bin:/usr/bin"), "/bin:/n/v/cache/bin:/usr/bin");
}

TEST(MountPathsTest, OtherPathsStayAsTheyAre) {
  EXPECT_EQ(Rewrite("/workspace2"), "/workspace2");
  EXPECT_EQ(Rewrite("/cachex/a"), "/cachex/a");
  EXPECT_EQ(Rewrite("/var/cache"), "/var/cache");  // not at a path's start
  EXPECT_EQ(Rewrite("x/workspace"), "x/workspace");
  EXPECT_EQ(Rewrite("workspace"), "workspace");
  EXPECT_EQ(Rewrite(""), "");
  EXPECT_EQ(RewriteMountPaths("/etc/hosts", {{.mount_path = "/", .host_path = "/n/v/root"}}),
            "/etc/hosts");
}

TEST(MountPathsTest, OnlyEnvironmentValuesAreRewritten) {
  std::vector<std::string> env = {"HF_HUB_CACHE=/cache/hf", "/cache=/cache", "PLAIN=x", "ODD"};
  RewriteEnvironment(env, kMounts);
  EXPECT_EQ(env, (std::vector<std::string>{"HF_HUB_CACHE=/n/v/hf", "/cache=/n/v/cache", "PLAIN=x",
                                           "ODD"}));
}

TEST(MountPathsTest, TheWorkingDirectoryIsInItsVolumeOrUnderTheContainersRoot) {
  EXPECT_EQ(WorkingDirectory("", kMounts, "/n/c"), "/n/c");
  EXPECT_EQ(WorkingDirectory("/workspace", kMounts, "/n/c"), "/n/v/workspace");
  EXPECT_EQ(WorkingDirectory("/workspace/src", kMounts, "/n/c"), "/n/v/workspace/src");
  EXPECT_EQ(WorkingDirectory("/cache/hf/x", kMounts, "/n/c"), "/n/v/hf/x");
  EXPECT_EQ(WorkingDirectory("/app", kMounts, "/n/c"), "/n/c/app");
  EXPECT_EQ(WorkingDirectory("/workspace2", kMounts, "/n/c"), "/n/c/workspace2");
}

}  // namespace
}  // namespace canhazgpu::simkubelet
