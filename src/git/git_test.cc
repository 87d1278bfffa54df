#include "git/git.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/strings.h"

namespace canhazgpu::git {
namespace {

using ::testing::HasSubstr;

class GitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           StrCat("git_test_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(GitTest, DiscoverFindsTheRepositoryFromASubdirectory) {
  EnsureInitialized();
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_init(&raw, dir_.c_str(), /*is_bare=*/0), 0);
  Repository created(raw);
  std::filesystem::create_directories(dir_ / "a" / "b");

  absl::StatusOr<Repository> found = Discover(dir_ / "a" / "b");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(std::filesystem::path(git_repository_workdir(found->get())),
            std::filesystem::path(StrCat(dir_.string(), "/")));

  // Open does not search upwards.
  absl::StatusOr<Repository> exact = Open(dir_ / "a");
  EXPECT_EQ(exact.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GitTest, DiscoverOutsideARepositoryIsNotFoundWithThePath) {
  absl::StatusOr<Repository> found = Discover(dir_);
  // The temp directory is not inside a repository on CI machines; if it
  // ever is, the test says so instead of passing vacuously.
  ASSERT_FALSE(found.ok()) << dir_ << " is inside a git repository";
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(found.status().message(), HasSubstr(dir_.string()));
  EXPECT_THAT(found.status().message(), HasSubstr("not inside a git repository"));
}

TEST(GitOid, RoundTripsAndRejectsWhatIsNotAnId) {
  const std::string hex = "0123456789abcdef0123456789abcdef01234567";
  absl::StatusOr<git_oid> oid = ParseOid(hex);
  ASSERT_TRUE(oid.ok()) << oid.status();
  EXPECT_EQ(ToHex(*oid), hex);
  EXPECT_EQ(ToHex(*ParseOid("0123456789ABCDEF0123456789ABCDEF01234567")), hex);
  EXPECT_EQ(ParseOid("0123").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOid("z123456789abcdef0123456789abcdef01234567").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GitError, MapsCodesAndKeepsTheContext) {
  EnsureInitialized();
  git_repository* raw = nullptr;
  int code = git_repository_open_ext(&raw, "/nonexistent/canhazgpu-git-test",
                                     GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  ASSERT_LT(code, 0);
  absl::Status status = Error(code, "opening x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("opening x: "));
}

}  // namespace
}  // namespace canhazgpu::git
