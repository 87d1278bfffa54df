// k8shazgpu vllm package and vllm unpack as a developer and an init
// container run them: the real binary, no cluster and no kubeconfig, a
// checkout made with the git command, the merge-base exported with git
// archive, and the result compared byte for byte with the work tree.
#include <filesystem>

#include "changeset/testing/git_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/cli_runner.h"

namespace canhazgpu::testing {
namespace {

using ::testing::HasSubstr;
namespace cs = ::canhazgpu::changeset::testing;
namespace fs = std::filesystem;

class K8shazgpuVllmChangesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/k8shazgpu_vllm_changes_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    vllm_ = cs::MakeFakeVllm(dir_, "upstream", {{"vllm/a.py", "a = 1\n"}, {"vllm/b.py", "b\n"}});
    base_commit_ = cs::GitLine(vllm_.work, "rev-parse HEAD");
    cs::Git(vllm_.work, "checkout -q -b feature");
    cs::WriteBytes(vllm_.work / "vllm/a.py", "# column-0 comment\na = 2\n");
    cs::Git(vllm_.work, "commit -q -am edit");
    cs::Git(vllm_.work, "rm -q vllm/b.py");
    cs::WriteBytes(vllm_.work / "vllm/new/c.py", "# New file: c\nc = 3\n");
    cs::WriteBytes(vllm_.work / "csrc/k.cu", std::string("\0\x01kernel", 8));
    base_ = dir_ / "base";
    fs::create_directories(base_);
    cs::Shell("git -C " + cs::Quote(vllm_.work.string()) + " -c tar.umask=022 archive " +
              base_commit_ + " | tar -x -C " + cs::Quote(base_.string()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // k8shazgpu with no kubeconfig anywhere: these commands must not need one.
  CliResult K8s(std::vector<std::string> args) {
    args.insert(args.begin(), {"timeout", "60", K8SHAZGPU_BINARY});
    return RunProgram(args, {{"HOME", dir_.string()}, {"KUBECONFIG", (dir_ / "none").string()}});
  }

  fs::path dir_;
  cs::FakeVllm vllm_;
  std::string base_commit_;
  fs::path base_;
};

TEST_F(K8shazgpuVllmChangesTest, PackageThenUnpackGivesTheWorkTree) {
  const std::string bundle = (dir_ / "changes.bin").string();
  CliResult package =
      K8s({"vllm", "package", "-C", (vllm_.work / "vllm" / "new").string(), "--out", bundle});
  ASSERT_EQ(package.exit_code, 0) << package.err;
  EXPECT_THAT(package.out, HasSubstr("merge-base " + base_commit_));
  EXPECT_THAT(package.out, HasSubstr("2 added, 1 modified, 1 deleted"));
  EXPECT_THAT(package.out, HasSubstr("compiled code changed (1 path, e.g. csrc/k.cu)"));
  EXPECT_THAT(package.out, HasSubstr("upstream upstream"));

  const fs::path to = dir_ / "workspace";
  CliResult unpack = K8s({"vllm", "unpack", bundle, "--base", base_.string(), "--to", to.string()});
  ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
  EXPECT_THAT(unpack.out, HasSubstr("applied 4 changes onto merge-base " + base_commit_));
  EXPECT_EQ(cs::Snapshot(to), cs::Snapshot(vllm_.work));
}

TEST_F(K8shazgpuVllmChangesTest, UnpackOntoTheWrongBaseFailsWithThePathsAndWritesNothing) {
  const std::string bundle = (dir_ / "changes.bin").string();
  ASSERT_EQ(K8s({"vllm", "package", "-C", vllm_.work.string(), "--out", bundle}).exit_code, 0);
  cs::WriteBytes(base_ / "vllm/a.py", "a = 'somebody else'\n");
  const fs::path to = dir_ / "workspace";
  CliResult unpack = K8s({"vllm", "unpack", bundle, "--base", base_.string(), "--to", to.string()});
  EXPECT_EQ(unpack.exit_code, 1);
  EXPECT_THAT(unpack.err, HasSubstr("1 rejected path: vllm/a.py (blob "));
  EXPECT_THAT(unpack.err, HasSubstr("nothing was written"));
  EXPECT_FALSE(fs::exists(to));
}

TEST_F(K8shazgpuVllmChangesTest, RefusesWhatIsNotABundleOrNotACheckout) {
  cs::WriteBytes(dir_ / "patch.diff", "diff --git a/x b/x\n");
  CliResult unpack = K8s({"vllm", "unpack", (dir_ / "patch.diff").string(), "--base",
                          base_.string(), "--to", (dir_ / "to").string()});
  EXPECT_EQ(unpack.exit_code, 2);
  EXPECT_THAT(unpack.err, HasSubstr("not a change set bundle"));

  CliResult package = K8s({"vllm", "package", "-C", dir_.string(), "--out", "x.bin"});
  EXPECT_EQ(package.exit_code, 1);
  EXPECT_THAT(package.err, HasSubstr("not inside a git work tree"));

  CliResult no_out = K8s({"vllm", "package", "-C", vllm_.work.string()});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_THAT(no_out.err, HasSubstr("needs --out FILE"));
}

}  // namespace
}  // namespace canhazgpu::testing
