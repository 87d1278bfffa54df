#include "core/make_directories.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

class MakeDirectoriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/make_directories_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  mode_t ModeOf(const std::string& path) {
    struct stat info;
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  }

  std::string dir_;
};

TEST_F(MakeDirectoriesTest, EveryCreatedDirectoryGetsExactlyTheModeWhateverTheUmask) {
  for (const mode_t mask : {mode_t{0}, mode_t{077}}) {
    const std::string top = dir_ + "/umask" + std::to_string(mask);
    const mode_t old = ::umask(mask);
    const absl::Status made = MakeDirectories(top + "/a/b/", 0750);
    ::umask(old);
    ASSERT_TRUE(made.ok()) << made;
    for (const std::string& d : {top, top + "/a", top + "/a/b"}) {
      EXPECT_EQ(ModeOf(d), 0750u) << d << " under umask " << mask;
    }
  }
}

TEST_F(MakeDirectoriesTest, LeavesExistingDirectoriesAsTheyAre) {
  ASSERT_EQ(::mkdir((dir_ + "/shared").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir_ + "/shared").c_str(), 01777), 0);
  ASSERT_TRUE(MakeDirectories(dir_ + "/shared/ours", 0700).ok());
  EXPECT_EQ(ModeOf(dir_ + "/shared"), 01777u);
  EXPECT_EQ(ModeOf(dir_ + "/shared/ours"), 0700u);
  EXPECT_TRUE(MakeDirectories(dir_ + "/shared/ours", 0755).ok());  // idempotent
  EXPECT_EQ(ModeOf(dir_ + "/shared/ours"), 0700u);
}

TEST_F(MakeDirectoriesTest, AFileInThePathIsFailedPrecondition) {
  std::ofstream(dir_ + "/file") << "x";
  absl::Status s = MakeDirectories(dir_ + "/file", 0750);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("file: not a directory"));
  EXPECT_EQ(MakeDirectories(dir_ + "/file/below", 0750).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace canhazgpu
