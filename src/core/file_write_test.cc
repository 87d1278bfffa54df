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
  EXPECT_EQ(missing_dir.code(), absl::StatusCode::kUnavailable);
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
  EXPECT_EQ(missing_dir.code(), absl::StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu
