#include "core/file_write.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FileWriteTest, ReplacesTheFileWholeWithExactlyTheMode) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/f";
  const mode_t old_umask = umask(077);  // the mode asked for wins over the umask
  ASSERT_TRUE(WriteFileAtomically(path, "first", 0644).ok());
  umask(old_umask);
  EXPECT_EQ(Read(path), "first");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer", 0600).ok());
  EXPECT_EQ(Read(path), "second, longer");
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);

  absl::Status missing_dir = WriteFileAtomically(dir + "/no/such/f", "x", 0600);
  EXPECT_EQ(missing_dir.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing_dir.message(), ::testing::HasSubstr("cannot write " + dir + "/no/such/f"));
  EXPECT_EQ(Read(path), "second, longer");
  std::filesystem::remove_all(dir);
}

TEST(FileWriteTest, AtomicOnlyWriteReplacesWholeWithTheModeAndLeavesNoTemporary) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/f";
  ASSERT_TRUE(WriteFileAtomically(path, "first, longer", 0644, FileSync::kAtomicOnly).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second", 0755, FileSync::kAtomicOnly).ok());
  EXPECT_EQ(Read(path), "second");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
  absl::Status missing_dir =
      WriteFileAtomically(dir + "/no/such/f", "x", 0600, FileSync::kAtomicOnly);
  EXPECT_EQ(missing_dir.code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

// Issue 29: the temporary name was "<path>.tmp.<pid>", opened without
// O_EXCL or O_NOFOLLOW, so a symlink planted there (in a tree a tenant
// hands to `vllm unpack`, say) had us write and chmod the file it points to.
TEST(FileWriteTest, Issue29SymlinkPlantedAtThePredictableTemporaryNameIsNotFollowed) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string outside = dir + "/outside";
  ASSERT_EQ(mkdir((dir + "/target").c_str(), 0755), 0);
  const std::string path = dir + "/target/f";
  { std::ofstream(outside) << "not yours"; }
  ASSERT_EQ(chmod(outside.c_str(), 0600), 0);
  ASSERT_EQ(symlink(outside.c_str(), (path + ".tmp." + std::to_string(getpid())).c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/target/.f.tmp.0000000000000000").c_str()), 0);

  ASSERT_TRUE(WriteFileAtomically(path, "mine", 0755).ok());
  EXPECT_EQ(Read(path), "mine");
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(Read(outside), "not yours");
  ASSERT_EQ(stat(outside.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // A symlink at the target itself is replaced, not written through.
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), path.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "mine again", 0644, FileSync::kAtomicOnly).ok());
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(Read(outside), "not yours");
  std::filesystem::remove_all(dir);
}

// What a crash left at a temporary name - even a directory - is skipped.
TEST(FileWriteTest, Issue29LeftoversAtTemporaryNamesDoNotBlockTheWrite) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/f";
  ASSERT_EQ(mkdir((path + ".tmp." + std::to_string(getpid())).c_str(), 0755), 0);
  { std::ofstream(dir + "/.f.tmp.0123456789abcdef") << "left by a crash"; }
  absl::Status written = WriteFileAtomically(path, "new", 0640);
  ASSERT_TRUE(written.ok()) << written;
  EXPECT_EQ(Read(path), "new");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  std::filesystem::remove_all(dir);
}

// A local failure says what it is: never Unavailable, which the CLI took
// for an unreachable API server.
TEST(FileWriteTest, Issue29ADirectoryInTheWayIsALocalErrorNamingThePath) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_EQ(mkdir((dir + "/d").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/d/x").c_str(), 0755), 0);
  absl::Status status = WriteFileAtomically(dir + "/d", "x", 0644);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(status.message(), "cannot replace " + dir + "/d: Is a directory");
  // Nothing is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
  std::filesystem::remove_all(dir);
}

TEST(FileWriteTest, SymlinkReplacesWhateverIsThereAndSkipsPlantedNames) {
  char tmpl[] = "/tmp/file_write_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/link";
  { std::ofstream(path) << "a file"; }
  ASSERT_EQ(mkdir((path + ".tmp." + std::to_string(getpid())).c_str(), 0755), 0);
  ASSERT_TRUE(CreateSymlinkAtomically(path, "somewhere").ok());
  EXPECT_EQ(std::filesystem::read_symlink(path), "somewhere");
  ASSERT_TRUE(CreateSymlinkAtomically(path, "elsewhere").ok());
  EXPECT_EQ(std::filesystem::read_symlink(path), "elsewhere");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            2);  // the link and the planted directory
  EXPECT_EQ(CreateSymlinkAtomically(dir + "/no/such/link", "x").code(),
            absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu
