#include "driver/temp_files.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::driver {
namespace {

namespace fs = std::filesystem;

TEST(TempFilesTest, TheTargetOfBothNamingsAndNothingElse) {
  EXPECT_EQ(TempFileTarget("checkpoint.json.tmp.123"), "checkpoint.json");
  EXPECT_EQ(TempFileTarget(".checkpoint.json.tmp.aB3-x"), "checkpoint.json");
  EXPECT_EQ(TempFileTarget(".a.json.tmp.x.tmp.y"), "a.json");
  EXPECT_EQ(TempFileTarget("checkpoint.json"), std::nullopt);
  EXPECT_EQ(TempFileTarget("checkpoint.json.tmp."), std::nullopt);
  EXPECT_EQ(TempFileTarget("checkpoint.json.tmp.12a"), std::nullopt);
  EXPECT_EQ(TempFileTarget(".checkpoint.json.tmp."), std::nullopt);
  EXPECT_EQ(TempFileTarget(".tmp.123"), std::nullopt);
  EXPECT_EQ(TempFileTarget("..tmp.x"), std::nullopt);
  EXPECT_EQ(TempFileTarget(".hidden"), std::nullopt);
}

TEST(TempFilesTest, SweepRemovesOnlyRegularTemporaryFilesOfOurNames) {
  char tmpl[] = "/tmp/temp_files_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"ours.json.tmp.1", ".ours.json.tmp.r4nd", "theirs.json.tmp.1",
                           ".theirs.json.tmp.r4nd", "ours.json"}) {
    std::ofstream(dir + "/" + name) << "x";
  }
  fs::create_directory(dir + "/.ours.json.tmp.dir");
  fs::create_symlink(dir + "/ours.json", dir + "/ours.json.tmp.2");

  EXPECT_THAT(SweepTempFiles(dir, [](std::string_view t) { return t == "ours.json"; }),
              ::testing::IsEmpty());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename());
  EXPECT_THAT(
      left, ::testing::UnorderedElementsAre("theirs.json.tmp.1", ".theirs.json.tmp.r4nd",
                                            "ours.json", ".ours.json.tmp.dir", "ours.json.tmp.2"));
  EXPECT_THAT(SweepTempFiles(dir + "/missing", [](std::string_view) { return true; }),
              ::testing::IsEmpty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace canhazgpu::driver
