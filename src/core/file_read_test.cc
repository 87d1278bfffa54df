#include "core/file_read.h"

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

using ::testing::EndsWith;
using ::testing::HasSubstr;

class FileReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/file_read_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  std::string dir_;
};

TEST_F(FileReadTest, ReadsUpToTheBoundAndRefusesOneByteMore) {
  const std::string content(10000, 'x');
  const std::string path = Write("f", content);
  absl::StatusOr<std::string> exact = ReadRegularFile(path, content.size(), "test file");
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(*exact, content);
  absl::StatusOr<std::string> over = ReadRegularFile(path, content.size() - 1, "test file");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("test file " + path + ": larger than 9999 bytes"));
}

TEST_F(FileReadTest, ReadsSmallAndEmptyFilesUnderALargeBound) {
  const std::string path = Write("small", "hello\n");
  absl::StatusOr<std::string> small = ReadRegularFile(path, 4 << 20, "test file");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(*small, "hello\n");
  absl::StatusOr<std::string> empty = ReadRegularFile(Write("empty", ""), 4 << 20, "test file");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, "");
}

// Files under /proc say they are 0 bytes long: the whole file is still read,
// past the first buffer, and the bound still holds.
TEST_F(FileReadTest, ReadsProcFilesThatReportNoSize) {
  struct stat st;
  // smaps, not maps: a binary linked with lld has so few mappings that its
  // maps fits in one page, and this must read past the first buffer.
  ASSERT_EQ(stat("/proc/self/smaps", &st), 0);
  ASSERT_EQ(st.st_size, 0);
  absl::StatusOr<std::string> maps = ReadRegularFile("/proc/self/smaps", 4 << 20, "smaps");
  ASSERT_TRUE(maps.ok()) << maps.status();
  EXPECT_GT(maps->size(), 4096u);  // longer than the first read's buffer
  EXPECT_THAT(*maps, EndsWith("\n"));
  EXPECT_THAT(*maps, HasSubstr("[stack]"));

  absl::StatusOr<std::string> bounded = ReadRegularFile("/proc/self/smaps", 100, "smaps");
  ASSERT_FALSE(bounded.ok());
  EXPECT_THAT(bounded.status().message(), HasSubstr("larger than 100 bytes"));

  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  absl::StatusOr<std::string> cmdline = ReadRegularFile("/proc/self/cmdline", 1 << 20, "cmdline");
  ASSERT_TRUE(cmdline.ok()) << cmdline.status();
  EXPECT_EQ(*cmdline, expected.str());
}

TEST_F(FileReadTest, RefusesWhatIsNotARegularFile) {
  for (const std::string& path : {std::string("/dev/null"), dir_}) {
    absl::StatusOr<std::string> text = ReadRegularFile(path, 100, "test file");
    ASSERT_FALSE(text.ok()) << path;
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(text.status().message(), HasSubstr("not a regular file"));
  }
  absl::StatusOr<std::string> missing = ReadRegularFile(dir_ + "/missing", 100, "test file");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace canhazgpu
