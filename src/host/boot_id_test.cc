#include "host/boot_id.h"

#include <fstream>

#include "gtest/gtest.h"

namespace canhazgpu::host {
namespace {

TEST(BootIdTest, ReadsThisBootsIdAndAFileWithoutItsNewline) {
  absl::StatusOr<std::string> id = ReadBootId();
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->size(), 36u) << *id;  // a UUID
  EXPECT_EQ(ReadBootId().value(), *id);

  const std::string path = ::testing::TempDir() + "/boot_id";
  std::ofstream(path) << "  0b8a-test\n";
  EXPECT_EQ(ReadBootId(path).value(), "0b8a-test");
  std::ofstream(path) << "\n";
  EXPECT_FALSE(ReadBootId(path).ok());
  EXPECT_FALSE(ReadBootId(path + ".missing").ok());
}

}  // namespace
}  // namespace canhazgpu::host
