// `k8shazgpu run` takes the working directory with it (issue 33, ADR
// 0017), end to end on the simulated cluster: the real CLI packs a git
// work tree, the ConfigMaps carry it, the init container - the real
// `k8shazgpu vllm unpack` from the node root - unpacks it into the pod's
// workspace, and the command runs there. --no-sync ships nothing; a
// directory too big to carry creates nothing.
#include <filesystem>
#include <fstream>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/k8shazgpu_run_fixture.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
namespace fs = std::filesystem;

void WriteInProject(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_F(K8shazgpuRunTest, TheWorkingDirectoryIsShippedAndTheCommandRunsInIt) {
  StartCluster(1, 1);
  const fs::path p = project_;
  WriteInProject(p / "hello.txt", "hello from the laptop\n");
  WriteInProject(p / "src/train.sh", "echo training\n");
  WriteInProject(p / "debug.log", "ignored\n");
  WriteInProject(p / "weights.bin", std::string(4096, 'w'));
  WriteInProject(p / ".gitignore", "*.log\n");
  fs::create_symlink("/nonexistent/dataset", p / "data");
  ASSERT_EQ(RunProgram({"git", "-C", project_, "init", "-q"}, {}).exit_code, 0);

  CliResult r =
      K8s({"run", "--sync-max-file", "1Ki", "--", "sh", "-c",
           "cat hello.txt; sh src/train.sh; readlink data; LC_ALL=C ls -A | tr '\\n' ' '; echo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "hello from the laptop\ntraining\n/nonexistent/dataset\n.gitignore data hello.txt src \n");
  EXPECT_THAT(r.err,
              HasSubstr("k8shazgpu: shipped " + project_ + " to /workspace: 3 files, 1 symlink, "));
  EXPECT_THAT(r.err, HasSubstr("left out: 1 ignored by .gitignore, .git,\n"));
  EXPECT_THAT(r.err, HasSubstr("1 over 1.0 KiB (--sync-max-file): weights.bin 4.0 KiB\n"));
  EXPECT_THAT(r.err, HasSubstr("symlinks out of the directory (shipped as links, not followed): "
                               "data -> /nonexistent/dataset\n"));
}

TEST_F(K8shazgpuRunTest, NoSyncShipsNothing) {
  StartCluster(1, 1);
  WriteInProject(fs::path(project_) / "hello.txt", "hello\n");
  CliResult r = K8s({"run", "--no-sync", "--name", "bare", "--", "sh", "-c",
                     "cat hello.txt 2>/dev/null || echo no such file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no such file\n");
  EXPECT_THAT(r.err, Not(HasSubstr("shipped")));
}

TEST_F(K8shazgpuRunTest, ADirectoryTooBigToCarryIsRefusedAndNothingIsCreated) {
  StartCluster(1, 1);
  std::mt19937 gen(7);
  for (int i = 0; i < 3; ++i) {
    std::string bytes(3 << 20, '\0');
    for (char& c : bytes) c = static_cast<char>(gen());
    WriteInProject(fs::path(project_) / ("weights-" + std::to_string(i) + ".bin"), bytes);
  }
  CliResult r = K8s({"run", "--sync-max-file", "4Mi", "--", "true"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("biggest: weights-"));
  EXPECT_THAT(r.err, HasSubstr("--no-sync"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(Labelled(kube::kPods, "default"), IsEmpty());
  EXPECT_THAT(Labelled(kube::kConfigMaps, "default"), IsEmpty());
  EXPECT_THAT(Labelled(kube::kResourceClaimTemplates, "default"), IsEmpty());
}

}  // namespace
}  // namespace canhazgpu::testing
