#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

using ::testing::MatchesRegex;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/atomic_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Contents(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  size_t Entries() {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir_),
                                             std::filesystem::directory_iterator()));
  }

  std::string dir_;
};

TEST_F(AtomicFileTest, PiecesAppearTogetherOnCommitOnly) {
  const std::string path = dir_ + "/f";
  { std::ofstream(path) << "old"; }
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, 0600, FileSync::kAtomicOnly);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Append("new ").ok());
  ASSERT_TRUE(file->Append("contents").ok());
  EXPECT_EQ(Contents(path), "old");
  EXPECT_EQ(Entries(), 2u);  // the target and the temporary beside it
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ(Contents(path), "new contents");
  EXPECT_EQ(Entries(), 1u);
}

TEST_F(AtomicFileTest, AbandonedFileLeavesTheTargetAndNoTemporary) {
  const std::string path = dir_ + "/f";
  {
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, 0644);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->Append("never seen").ok());
  }
  EXPECT_EQ(Entries(), 0u);
}

TEST_F(AtomicFileTest, TheModeIsExactlyTheOneAskedForWhateverTheUmask) {
  for (mode_t umask_bits : {mode_t{0}, mode_t{022}, mode_t{077}}) {
    const mode_t old_umask = umask(umask_bits);
    const std::string path = dir_ + "/f" + std::to_string(umask_bits);
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, 0750);
    umask(old_umask);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->Commit().ok());
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750u) << "umask " << umask_bits;
  }
}

// The name is not one an attacker can plant ahead: 64 random bits, hidden,
// beside the target; and a long target name still makes a legal one.
TEST_F(AtomicFileTest, TemporaryNamesAreRandomHiddenAndShortEnough) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<std::string> name = RandomTemporaryPathFor("/some/dir/config.json");
    ASSERT_TRUE(name.ok());
    EXPECT_THAT(*name, MatchesRegex("/some/dir/\\.config\\.json\\.tmp\\.[0-9a-f]{16}"));
    seen.insert(*name);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_THAT(*RandomTemporaryPathFor("bare"), MatchesRegex("\\.bare\\.tmp\\.[0-9a-f]{16}"));

  const std::string path = dir_ + "/" + std::string(255, 'n');
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, 0644);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_TRUE(std::filesystem::exists(path));
}

TEST_F(AtomicFileTest, LocalErrorsAreCodedByWhatHappenedNeverUnavailable) {
  EXPECT_EQ(LocalFileError(ENOENT, "x").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LocalFileError(EACCES, "x").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(LocalFileError(EISDIR, "x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(LocalFileError(ENOSPC, "x").code(), absl::StatusCode::kInternal);
  EXPECT_EQ(LocalFileError(EISDIR, "cannot write /a/b").message(),
            "cannot write /a/b: Is a directory");
}

TEST_F(AtomicFileTest, AFixedNameFileNeverWritesThroughAPlantedLink) {
  const std::string outside = dir_ + "/outside";
  { std::ofstream(outside) << "precious"; }
  ASSERT_EQ(chmod(outside.c_str(), 0600), 0);
  const std::string lock = dir_ + "/lock";
  ASSERT_EQ(symlink(outside.c_str(), lock.c_str()), 0);

  const int fd = OpenFixedNameFile(lock, O_RDWR | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "x", 1), 1);
  close(fd);
  EXPECT_EQ(Contents(outside), "precious");
  struct stat st;
  ASSERT_EQ(stat(outside.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(lstat(lock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(Contents(lock), "x");

  // An existing file of ours is opened as it is, contents kept.
  const int again = OpenFixedNameFile(lock, O_RDWR, 0644);
  ASSERT_GE(again, 0);
  close(again);
  EXPECT_EQ(Contents(lock), "x");
}

}  // namespace
}  // namespace canhazgpu
