// k8shazgpu vllm package and vllm unpack as a developer and an init
// container run them: the real binary, no cluster and no kubeconfig, a
// checkout made with the git command, the merge-base exported with git
// archive, and the result compared byte for byte with the work tree.
#include <filesystem>

#include "changeset/bundle.h"
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

// Issue 29: a directory where the bundle wants a file was reported as
// "cannot reach the API server ... gave up after 3 tries", and --to was
// left half-written.
TEST_F(K8shazgpuVllmChangesTest, Issue29ALocalErrorSaysWhatItIsAndLeavesNoHalfWrittenTarget) {
  const std::string bundle = (dir_ / "changes.bin").string();
  ASSERT_EQ(K8s({"vllm", "package", "-C", vllm_.work.string(), "--out", bundle}).exit_code, 0);
  cs::WriteBytes(base_ / "vllm/new/c.py/__pycache__/x.pyc", "stray");  // where c.py goes
  const fs::path to = dir_ / "workspace";
  CliResult unpack = K8s({"vllm", "unpack", bundle, "--base", base_.string(), "--to", to.string()});
  EXPECT_EQ(unpack.exit_code, 1);
  EXPECT_EQ(unpack.err, "k8shazgpu: cannot replace " + (to / "vllm/new/c.py").string() +
                            ": Is a directory; " + to.string() + " was left as it was\n");
  EXPECT_FALSE(fs::exists(to));
}

// What the pod's init container does: the bundle from the ConfigMap part
// files, the merge-base exported from the node's mirror into the (existing,
// empty) emptyDir mount point, the change set applied in place.
TEST_F(K8shazgpuVllmChangesTest, UnpackFromTheMirrorAndThePartFilesGivesTheWorkTree) {
  const std::string bundle = (dir_ / "changes.bin").string();
  ASSERT_EQ(K8s({"vllm", "package", "-C", vllm_.work.string(), "--out", bundle}).exit_code, 0);
  const std::vector<std::string> parts = changeset::SplitIntoParts(cs::ReadBytes(bundle), 100);
  ASSERT_GE(parts.size(), 2u);  // several parts, joined in order
  const fs::path parts_dir = dir_ / "changes";
  for (size_t i = 0; i < parts.size(); ++i) {
    cs::WriteBytes(parts_dir / ("part-" + std::to_string(i)), parts[i]);
  }
  const fs::path mirror = dir_ / "mirror.git";
  cs::Shell("git clone -q --mirror " + cs::Quote(vllm_.upstream.string()) + " " +
            cs::Quote(mirror.string()));

  const fs::path to = dir_ / "workspace";
  fs::create_directories(to);  // the emptyDir exists, empty
  const fs::path list = dir_ / "changed";
  CliResult unpack =
      K8s({"vllm", "unpack", "--parts", parts_dir.string(), "--mirror", mirror.string(), "--commit",
           base_commit_, "--to", to.string(), "--list", list.string()});
  ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
  // What the pod's overlay copies or removes, in path order.
  EXPECT_EQ(cs::ReadBytes(list), "M csrc/k.cu\nM vllm/a.py\nD vllm/b.py\nM vllm/new/c.py\n");
  EXPECT_THAT(unpack.out, HasSubstr("applied 4 changes onto merge-base " + base_commit_));
  std::map<std::string, std::string> want = cs::Snapshot(vllm_.work);
  std::map<std::string, std::string> got = cs::Snapshot(to);
  EXPECT_EQ(got, want);

  // Into a directory that does not exist yet, from the single file.
  const fs::path fresh = dir_ / "fresh";
  CliResult again = K8s({"vllm", "unpack", bundle, "--mirror", mirror.string(), "--commit",
                         base_commit_, "--to", fresh.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(cs::Snapshot(fresh), want);
}

TEST_F(K8shazgpuVllmChangesTest, UnpackFromTheMirrorWithAWrongCommitWritesNothing) {
  const std::string bundle = (dir_ / "changes.bin").string();
  ASSERT_EQ(K8s({"vllm", "package", "-C", vllm_.work.string(), "--out", bundle}).exit_code, 0);
  const fs::path mirror = dir_ / "mirror.git";
  cs::Shell("git clone -q --mirror " + cs::Quote(vllm_.upstream.string()) + " " +
            cs::Quote(mirror.string()));
  const fs::path to = dir_ / "workspace";
  fs::create_directories(to);

  // Not the bundle's merge-base.
  const std::string other = std::string(40, 'a');
  CliResult wrong = K8s({"vllm", "unpack", bundle, "--mirror", mirror.string(), "--commit", other,
                         "--to", to.string()});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, HasSubstr("the bundle's merge-base is " + base_commit_ +
                                   ", not --commit " + other + "; nothing was written"));
  EXPECT_TRUE(fs::is_empty(to));

  // The merge-base, but a mirror that lacks it (another repository).
  const fs::path stranger = dir_ / "stranger.git";
  cs::Shell("git init -q --bare " + cs::Quote(stranger.string()));
  CliResult missing = K8s({"vllm", "unpack", bundle, "--mirror", stranger.string(), "--commit",
                           base_commit_, "--to", to.string()});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr(base_commit_.substr(0, 12)));
  EXPECT_TRUE(fs::is_empty(to));

  // A workspace that is not empty is refused and left alone.
  cs::WriteBytes(to / "mine.txt", "keep me\n");
  CliResult busy = K8s({"vllm", "unpack", bundle, "--mirror", mirror.string(), "--commit",
                        base_commit_, "--to", to.string()});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_THAT(busy.err, HasSubstr("is not an empty directory"));
  EXPECT_EQ(cs::ReadBytes(to / "mine.txt"), "keep me\n");

  // Both sources of the bundle, or neither base, is a usage error.
  EXPECT_EQ(K8s({"vllm", "unpack", bundle, "--parts", dir_.string(), "--base", base_.string(),
                 "--to", (dir_ / "x").string()})
                .exit_code,
            2);
  EXPECT_EQ(K8s({"vllm", "unpack", bundle, "--to", (dir_ / "x").string()}).exit_code, 2);
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
