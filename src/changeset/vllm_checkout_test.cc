#include "changeset/vllm_checkout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "changeset/testing/git_fixture.h"
#include "changeset/testing/temp_dir.h"

namespace canhazgpu::changeset {
namespace {

using ::testing::HasSubstr;
using namespace testing;  // NOLINT: the fixture helpers

class VllmCheckoutTest : public TempDirTest {};

TEST_F(VllmCheckoutTest, FindsTheUpstreamUnderAnyNameAndTheMergeBaseFromASubdirectory) {
  FakeVllm v = MakeFakeVllm(dir_, "up", {{"vllm/engine/x.py", "x = 1\n"}});
  // The developer's fork is origin; the upstream is "up".
  const fs::path fork = dir_ / "me" / "vllm.git";
  fs::create_directories(fork.parent_path());
  Git(dir_, "clone -q --bare " + Quote(v.upstream.string()) + " " + Quote(fork.string()));
  Git(v.work, "remote add origin " + Quote(fork.string()));
  Git(v.work, "fetch -q origin");
  const std::string base = GitLine(v.work, "rev-parse HEAD");
  Git(v.work, "checkout -q -b feature");
  WriteBytes(v.work / "vllm/engine/x.py", "x = 2\n");
  Git(v.work, "commit -q -am mine");

  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(v.work / "vllm" / "engine", false);
  ASSERT_TRUE(checkout.ok()) << checkout.status();
  EXPECT_EQ(checkout->top_level, v.work);
  EXPECT_EQ(checkout->remote_name, "up");
  // Issue 33: a local path upstream is named as the cache plan takes it.
  EXPECT_EQ(checkout->remote_url, "file://" + v.upstream.string());
  EXPECT_EQ(checkout->upstream_ref, "refs/remotes/up/main");
  EXPECT_EQ(checkout->branch, "feature");
  EXPECT_EQ(checkout->head, GitLine(v.work, "rev-parse HEAD"));
  EXPECT_EQ(checkout->merge_base, base);
  EXPECT_EQ(checkout->merge_base, GitLine(v.work, "merge-base HEAD up/main"));
}

TEST_F(VllmCheckoutTest, MergeBaseIsWhereTheBranchLeftMainNotMainsTip) {
  FakeVllm v = MakeFakeVllm(dir_);
  const std::string fork_point = GitLine(v.work, "rev-parse HEAD");
  Git(v.work, "checkout -q -b feature");
  WriteBytes(v.work / "mine.py", "1\n");
  Git(v.work, "add mine.py");
  Git(v.work, "commit -q -m mine");
  // Upstream moves on after the branch was made.
  const fs::path other = dir_ / "other";
  Git(dir_, "clone -q " + Quote(v.upstream.string()) + " " + Quote(other.string()));
  WriteBytes(other / "later.py", "2\n");
  Git(other, "add later.py");
  Git(other, "commit -q -m later");
  Git(other, "push -q origin main");

  absl::StatusOr<VllmCheckout> stale = DetectVllmCheckout(v.work, false);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(stale->merge_base, fork_point);
  // --fetch sees upstream's new commit, and the merge-base stays the fork point.
  absl::StatusOr<VllmCheckout> fetched = DetectVllmCheckout(v.work, true);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->merge_base, fork_point);
  EXPECT_EQ(GitLine(v.work, "rev-parse up/main"), GitLine(other, "rev-parse HEAD"));
}

TEST_F(VllmCheckoutTest, AProjectThatOnlyMentionsVllmIsNotAVllmCheckout) {
  const fs::path repo = dir_ / "app";
  fs::create_directories(repo);
  Git(repo, "init -q");
  WriteBytes(repo / "pyproject.toml", "[project]\ndependencies = [\"vllm\"]\n");
  WriteBytes(repo / "setup.py", "install_requires=['vllm']\n");
  Git(repo, "add -A");
  Git(repo, "commit -q -m app");
  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(repo, false);
  EXPECT_EQ(checkout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checkout.status().message(), HasSubstr("no vllm/__init__.py at its top level"));
}

TEST_F(VllmCheckoutTest, OutsideAnyRepositoryIsRefused) {
  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(dir_, false);
  EXPECT_EQ(checkout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checkout.status().message(), HasSubstr("not inside a git work tree"));
}

// Issue 33: `vllm package` took /srv/vllm.git and `vllm run` then refused
// it as a git URL; a local path is file:// everywhere, other URLs unchanged.
TEST(LocalPathAsFileUrlTest, LocalPathsBecomeFileUrlsOthersStay) {
  EXPECT_EQ(LocalPathAsFileUrl("/srv/vllm.git", "/home/me/vllm"), "file:///srv/vllm.git");
  EXPECT_EQ(LocalPathAsFileUrl("../mirror/vllm.git/", "/home/me/vllm"),
            "file:///home/me/mirror/vllm.git/");
  EXPECT_EQ(LocalPathAsFileUrl("./a:b", "/w"), "file:///w/a:b");
  for (const char* url :
       {"https://github.com/vllm-project/vllm.git", "git@github.com:vllm-project/vllm.git",
        "file:///srv/vllm.git", "ssh://git@h/x.git", "host:path/x.git"}) {
    EXPECT_EQ(LocalPathAsFileUrl(url, "/w"), url);
  }
}

TEST_F(VllmCheckoutTest, FindsAnSshUpstreamAndADetachedHead) {
  FakeVllm v = MakeFakeVllm(dir_, "origin");
  const std::string base = GitLine(v.work, "rev-parse HEAD");
  Git(v.work, "remote set-url origin https://github.com/me/vllm.git");
  Git(v.work, "remote add vllm git@github.com:vllm-project/vllm.git");
  Git(v.work, "update-ref refs/remotes/vllm/main " + base);
  WriteBytes(v.work / "x.py", "1\n");
  Git(v.work, "add x.py");
  Git(v.work, "commit -q -m x");
  Git(v.work, "checkout -q --detach HEAD");

  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(v.work, false);
  ASSERT_TRUE(checkout.ok()) << checkout.status();
  EXPECT_EQ(checkout->remote_name, "vllm");
  EXPECT_EQ(checkout->remote_url, "git@github.com:vllm-project/vllm.git");
  EXPECT_EQ(checkout->branch, "");
  EXPECT_EQ(checkout->merge_base, base);
}

TEST_F(VllmCheckoutTest, FallsBackToOriginAndItsHead) {
  FakeVllm v = MakeFakeVllm(dir_, "origin");
  // A mirror whose URL does not say vllm-project: origin it is.
  Git(v.work, "remote set-url origin " + Quote((dir_ / "mirror.git").string()));
  Git(v.work, "update-ref -d refs/remotes/origin/main");
  Git(v.work, "update-ref refs/remotes/origin/trunk HEAD");
  Git(v.work, "symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/trunk");
  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(v.work, false);
  ASSERT_TRUE(checkout.ok()) << checkout.status();
  EXPECT_EQ(checkout->remote_name, "origin");
  EXPECT_EQ(checkout->upstream_ref, "refs/remotes/origin/trunk");
}

TEST_F(VllmCheckoutTest, SaysWhatToDoWithoutARemoteOrItsMainBranch) {
  FakeVllm v = MakeFakeVllm(dir_, "up");
  Git(v.work, "update-ref -d refs/remotes/up/main");
  Git(v.work, "update-ref -d refs/remotes/up/HEAD");
  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(v.work, false);
  EXPECT_EQ(checkout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checkout.status().message(), HasSubstr("run git fetch up or pass --fetch"));
  // --fetch gets it.
  EXPECT_TRUE(DetectVllmCheckout(v.work, true).ok());

  Git(v.work, "remote remove up");
  checkout = DetectVllmCheckout(v.work, false);
  EXPECT_EQ(checkout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checkout.status().message(), HasSubstr("no git remote points at vllm-project/vllm"));
}

TEST_F(VllmCheckoutTest, UnrelatedHistoriesHaveNoMergeBase) {
  FakeVllm v = MakeFakeVllm(dir_, "up");
  Git(v.work, "checkout -q --orphan lonely");
  Git(v.work, "commit -q -m lonely");
  absl::StatusOr<VllmCheckout> checkout = DetectVllmCheckout(v.work, false);
  EXPECT_EQ(checkout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checkout.status().message(), HasSubstr("no merge base"));
}

TEST(IsVllmUpstreamUrlTest, AcceptsTheUsualSpellingsOnly) {
  for (const char* url :
       {"https://github.com/vllm-project/vllm", "https://github.com/vllm-project/vllm.git",
        "https://github.com/vllm-project/vllm/", "git@github.com:vllm-project/vllm.git",
        "ssh://git@github.com/vllm-project/vllm", "https://github.com/VLLM-Project/vLLM.git",
        "/srv/mirrors/vllm-project/vllm.git"}) {
    EXPECT_TRUE(IsVllmUpstreamUrl(url)) << url;
  }
  for (const char* url :
       {"https://github.com/me/vllm.git", "https://github.com/not-vllm-project/vllm",
        "https://github.com/vllm-project/vllm-fork", ""}) {
    EXPECT_FALSE(IsVllmUpstreamUrl(url)) << url;
  }
}

}  // namespace
}  // namespace canhazgpu::changeset
