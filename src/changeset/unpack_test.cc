#include "changeset/unpack.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "changeset/blob_id.h"
#include "changeset/bundle.h"
#include "changeset/testing/git_fixture.h"
#include "changeset/testing/temp_dir.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace testing;  // NOLINT: the fixture helpers

class UnpackTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    base_ = dir_ / "base";
    WriteBytes(base_ / "keep.py", "keep\n");
    WriteBytes(base_ / "edit.py", "old\n");
    WriteBytes(base_ / "dir/gone.py", "gone\n");
    WriteBytes(base_ / "bin/tool", "#!/bin/sh\n", 0755);
    fs::create_symlink("keep.py", base_ / "link");
    change_set_.base_commit = "0123456789abcdef0123456789abcdef01234567";
    change_set_.entries = {
        {.path = "dir/gone.py", .base_blob = BlobIdOf("gone\n"), .kind = EntryKind::kDeleted},
        {.path = "edit.py",
         .base_blob = BlobIdOf("old\n"),
         .kind = EntryKind::kFile,
         .mode = 0755,
         .data = "new\n"},
        {.path = "link",
         .base_blob = BlobIdOf("keep.py"),
         .kind = EntryKind::kSymlink,
         .data = "edit.py"},
        {.path = "new/deep/file.txt", .kind = EntryKind::kFile, .mode = 0644, .data = "fresh\n"},
    };
  }

  fs::path base_;
  ChangeSet change_set_;
};

TEST_F(UnpackTest, CopiesTheBaseThenAppliesEveryEntry) {
  const fs::path to = dir_ / "to";
  ASSERT_TRUE(Unpack(Encode(change_set_), base_, to).ok());
  std::map<std::string, std::string> got = Snapshot(to);
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"bin/tool", "f 0755 #!/bin/sh\n"},
                                                     {"edit.py", "f 0755 new\n"},
                                                     {"keep.py", "f 0644 keep\n"},
                                                     {"link", "l edit.py"},
                                                     {"new/deep/file.txt", "f 0644 fresh\n"}}));
  // The deletion took its now-empty directory with it, as git does.
  EXPECT_FALSE(fs::exists(to / "dir"));
  // The base was only read.
  EXPECT_EQ(ReadBytes(base_ / "edit.py"), "old\n");
}

TEST_F(UnpackTest, AWrongBaseIsRefusedWithThePathsAndNothingIsWritten) {
  WriteBytes(base_ / "edit.py", "someone else's edit\n");
  WriteBytes(base_ / "new/deep/file.txt", "already here\n");
  fs::remove(base_ / "dir/gone.py");
  const std::map<std::string, std::string> before = Snapshot(base_);

  const fs::path to = dir_ / "to";
  absl::Status status = Unpack(Encode(change_set_), base_, to);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("3 rejected paths"));
  EXPECT_THAT(status.message(), HasSubstr("dir/gone.py (missing)"));
  EXPECT_THAT(status.message(), HasSubstr("edit.py (blob "));
  EXPECT_THAT(status.message(), HasSubstr("new/deep/file.txt (present, expected absent)"));
  EXPECT_THAT(status.message(), Not(HasSubstr("link")));
  EXPECT_FALSE(fs::exists(to));

  // In place: the base is untouched too.
  EXPECT_FALSE(Unpack(Encode(change_set_), base_, base_).ok());
  EXPECT_EQ(Snapshot(base_), before);
}

TEST_F(UnpackTest, RefusesATargetThatAlreadyHoldsFiles) {
  const fs::path to = dir_ / "to";
  WriteBytes(to / "stray", "x");
  absl::Status status = Unpack(Encode(change_set_), base_, to);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("is not empty"));
}

TEST_F(UnpackTest, NeverWritesOrDeletesThroughASymlinkedDirectory) {
  const fs::path outside = dir_ / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, base_ / "escape");
  change_set_.entries.push_back(
      {.path = "escape/evil.txt", .kind = EntryKind::kFile, .mode = 0644, .data = "x"});
  WriteBytes(outside / "victim.txt", "keep me\n");
  change_set_.entries.push_back({.path = "escape/victim.txt",
                                 .base_blob = BlobIdOf("keep me\n"),
                                 .kind = EntryKind::kDeleted});
  std::sort(change_set_.entries.begin(), change_set_.entries.end(),
            [](const ChangeEntry& a, const ChangeEntry& b) { return a.path < b.path; });
  const std::map<std::string, std::string> before = Snapshot(base_);
  absl::Status status = Unpack(Encode(change_set_), base_, base_);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("escape/evil.txt (below the symlink escape)"));
  EXPECT_THAT(status.message(), HasSubstr("escape/victim.txt (below the symlink escape)"));
  EXPECT_FALSE(fs::exists(outside / "evil.txt"));
  EXPECT_EQ(ReadBytes(outside / "victim.txt"), "keep me\n");
  EXPECT_EQ(Snapshot(base_), before);
}

// Issue 29: the base tree is the tenant's; names it plants beside the
// files unpack writes are neither followed nor in the way.
TEST_F(UnpackTest, Issue29NamesPlantedBesideTheTargetsAreNotFollowed) {
  const fs::path outside = dir_ / "outside";
  WriteBytes(outside, "not yours\n");
  const std::string pid = std::to_string(getpid());
  fs::create_symlink(outside, base_ / ("edit.py.tmp." + pid));
  fs::create_directories(base_ / ("link.tmp." + pid));
  absl::Status status = Unpack(Encode(change_set_), base_, base_);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadBytes(outside), "not yours\n");
  EXPECT_EQ(fs::status(outside).permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_EQ(ReadBytes(base_ / "edit.py"), "new\n");
  EXPECT_EQ(fs::read_symlink(base_ / "link"), "edit.py");
}

// Issue 29: a small bundle over the expanded-size limit is refused before
// anything is written, naming the limit.
TEST_F(UnpackTest, Issue29ABundleExpandingPastTheLimitIsRefusedAndWritesNothing) {
  change_set_.entries[3].data = std::string(2 << 20, 'z');  // 2 MiB, a few KiB packed
  const std::string bundle = Encode(change_set_);
  ASSERT_LT(bundle.size(), 10'000u);
  const fs::path to = dir_ / "to";
  absl::Status status = Unpack(bundle, base_, to, {.limits = {.file = 1 << 20}});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "change set bundle: 'new/deep/file.txt' is 2.0 MiB, over the 1.0 MiB limit on one "
            "file");
  status = Unpack(bundle, base_, to, {.limits = {.expanded = 1 << 20}});
  EXPECT_THAT(status.message(), HasSubstr("over the 1.0 MiB limit on a bundle's expanded size"));
  EXPECT_FALSE(fs::exists(to));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // base
  // In place, the base is untouched.
  const std::map<std::string, std::string> before = Snapshot(base_);
  EXPECT_FALSE(Unpack(bundle, base_, base_, {.limits = {.expanded = 1 << 20}}).ok());
  EXPECT_EQ(Snapshot(base_), before);
  // Within the limits it unpacks.
  ASSERT_TRUE(Unpack(bundle, base_, to, {.limits = {.file = 2 << 20}}).ok());
  EXPECT_EQ(fs::file_size(to / "new/deep/file.txt"), 2u << 20);
}

// Issue 29: a directory where the bundle wants a file failed as "cannot
// reach the API server" and left --to half-written.
TEST_F(UnpackTest, Issue29ALocalErrorNamesThePathAndLeavesTheTargetAsItWas) {
  WriteBytes(base_ / "new/deep/file.txt/stray.pyc", "x");  // untracked, in the way
  const fs::path to = dir_ / "to";
  absl::Status status = Unpack(Encode(change_set_), base_, to);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "cannot replace " + (to / "new/deep/file.txt").string() +
                                  ": Is a directory; " + to.string() + " was left as it was");
  EXPECT_FALSE(fs::exists(to));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  // An existing empty target (an emptyDir's mount point) stays empty.
  fs::create_directories(to);
  status = Unpack(Encode(change_set_), base_, to);
  EXPECT_THAT(status.message(), HasSubstr(": Is a directory; "));
  EXPECT_TRUE(fs::is_empty(to));
}

TEST_F(UnpackTest, IntoAnExistingEmptyDirectoryAfterACrashedUnpack) {
  const fs::path to = dir_ / "to";
  WriteBytes(to / ".canhazgpu-unpack.tmp.0123456789abcdef/edit.py", "half\n");
  ASSERT_TRUE(Unpack(Encode(change_set_), base_, to).ok());
  EXPECT_EQ(Snapshot(to),
            (std::map<std::string, std::string>{{"bin/tool", "f 0755 #!/bin/sh\n"},
                                                {"edit.py", "f 0755 new\n"},
                                                {"keep.py", "f 0644 keep\n"},
                                                {"link", "l edit.py"},
                                                {"new/deep/file.txt", "f 0644 fresh\n"}}));
}

TEST_F(UnpackTest, ACorruptBundleIsRefusedBeforeTouchingAnything) {
  std::string bundle = Encode(change_set_);
  bundle[bundle.size() / 2] ^= 0x55;
  const fs::path to = dir_ / "to";
  absl::Status status = Unpack(bundle, base_, to);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(fs::exists(to));
}

TEST_F(UnpackTest, AMissingBaseDirectoryIsNamed) {
  absl::Status status = Unpack(Encode(change_set_), dir_ / "nope", dir_ / "to");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr((dir_ / "nope").string()));
}

TEST(BlobIdTest, MatchesGitHashObject) {
  EXPECT_EQ(git::ToHex(BlobIdOf("hello\n")), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(git::ToHex(BlobIdOf("")), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

}  // namespace
}  // namespace canhazgpu::changeset
