#include "changeset/directory_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "changeset/bundle.h"
#include "changeset/testing/git_fixture.h"
#include "changeset/testing/temp_dir.h"
#include "changeset/unpack.h"

namespace canhazgpu::changeset {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: the fixture helpers

// "path" for a file, "path -> target" for a symlink, in the set's order.
std::vector<std::string> Shipped(const DirectoryFiles& files) {
  std::vector<std::string> out;
  for (const ChangeEntry& e : files.change_set.entries) {
    out.push_back(e.kind == EntryKind::kSymlink ? e.path + " -> " + e.data : e.path);
  }
  return out;
}

const ChangeEntry* EntryAt(const DirectoryFiles& files, const std::string& path) {
  for (const ChangeEntry& e : files.change_set.entries) {
    if (e.path == path) return &e;
  }
  return nullptr;
}

class DirectoryFilesTest : public TempDirTest {
 protected:
  // A git work tree at dir_/proj with a .gitignore, tracked files (two of
  // them matching the ignore rules, added by force) and untracked ones.
  fs::path MakeRepo() {
    const fs::path p = dir_ / "proj";
    fs::create_directories(p);
    Git(p, "init -q");
    WriteBytes(p / ".gitignore", "*.log\nbuild/\n");
    WriteBytes(p / "train.py", "print('train')\n");
    WriteBytes(p / "keep.log", "tracked although ignored\n");
    WriteBytes(p / "build/tracked.txt", "tracked in an ignored directory\n");
    Git(p, "add .gitignore train.py");
    Git(p, "add -f keep.log build/tracked.txt");
    Git(p, "commit -q -m base");
    WriteBytes(p / "new.py", "untracked, not ignored\n");
    WriteBytes(p / "debug.log", "ignored\n");
    WriteBytes(p / "build/out.o", "ignored\n");
    WriteBytes(p / "sub/mod.py", "x = 1\n");
    WriteBytes(p / "sub/trace.log", "ignored\n");
    return p;
  }
};

TEST_F(DirectoryFilesTest, ADirectoryOutsideGitShipsEveryFileButGit) {
  const fs::path p = dir_ / "plain";
  WriteBytes(p / "hello.txt", "hello\n");
  WriteBytes(p / "bin/run.sh", "#!/bin/sh\n", 0755);
  WriteBytes(p / "debug.log", "no .gitignore applies here\n");
  WriteBytes(p / "x/.git/config", "[core]\n");
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(Shipped(*files), ElementsAre("bin/run.sh", "debug.log", "hello.txt"));
  EXPECT_EQ(files->git_dirs, 1);
  EXPECT_TRUE(files->git_top.empty());
  EXPECT_EQ(files->change_set.base_commit, kNoBaseCommit);
  EXPECT_EQ(EntryAt(*files, "bin/run.sh")->mode, 0755u);
  EXPECT_EQ(EntryAt(*files, "hello.txt")->mode, 0644u);
  EXPECT_EQ(EntryAt(*files, "hello.txt")->data, "hello\n");
  EXPECT_FALSE(EntryAt(*files, "hello.txt")->base_blob.has_value());
}

TEST_F(DirectoryFilesTest, AGitWorkTreeLeavesOutIgnoredFilesAndGitButNotTrackedOnes) {
  const fs::path p = MakeRepo();
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(Shipped(*files), ElementsAre(".gitignore", "build/tracked.txt", "keep.log", "new.py",
                                           "sub/mod.py", "train.py"));
  // debug.log, build/out.o, sub/trace.log.
  EXPECT_EQ(files->ignored, 3);
  EXPECT_EQ(files->git_dirs, 1);
  EXPECT_EQ(files->git_top, fs::canonical(p));
}

TEST_F(DirectoryFilesTest, AnIgnoredDirectoryIsNotEntered) {
  const fs::path p = MakeRepo();
  for (int i = 0; i < 5; ++i) WriteBytes(p / "venv/lib" / std::to_string(i), "x");
  WriteBytes(p / ".gitignore", "*.log\nbuild/\nvenv/\n");
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(EntryAt(*files, "venv/lib/0"), nullptr);
  EXPECT_EQ(files->ignored, 4);  // venv/ counts once
}

TEST_F(DirectoryFilesTest, ASubdirectoryShipsItselfWithTheWorkTreesRules) {
  const fs::path p = MakeRepo();
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p / "sub");
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(Shipped(*files), ElementsAre("mod.py"));
  EXPECT_EQ(files->ignored, 1);  // trace.log, by the top's *.log
}

TEST_F(DirectoryFilesTest, AFileOverTheBoundIsLeftOutAndListed) {
  const fs::path p = dir_ / "plain";
  WriteBytes(p / "small.txt", std::string(100, 's'));
  WriteBytes(p / "data/big.bin", std::string(300, 'b'));
  WriteBytes(p / "data/bigger.bin", std::string(400, 'b'));
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p, {.max_file_size = 200});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(Shipped(*files), ElementsAre("small.txt"));
  EXPECT_EQ(files->too_big, 2);
  ASSERT_EQ(files->biggest_left_out.size(), 2u);
  EXPECT_EQ(files->biggest_left_out[0].path, "data/bigger.bin");
  EXPECT_EQ(files->biggest_left_out[0].bytes, 400u);
  EXPECT_EQ(files->biggest_left_out[1].path, "data/big.bin");
}

TEST_F(DirectoryFilesTest, SymlinksAreShippedAsLinksAndNeverFollowed) {
  const fs::path p = dir_ / "plain";
  WriteBytes(dir_ / "outside/secret.txt", "SECRET");
  WriteBytes(p / "real.txt", "inside\n");
  fs::create_symlink(dir_ / "outside/secret.txt", p / "absolute");
  fs::create_symlink("../outside", p / "up");
  fs::create_symlink("real.txt", p / "inside");
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(Shipped(*files), ElementsAre("absolute -> " + (dir_ / "outside/secret.txt").string(),
                                           "inside -> real.txt", "real.txt", "up -> ../outside"));
  EXPECT_THAT(files->outward_links, ElementsAre("absolute", "up"));
  for (const ChangeEntry& e : files->change_set.entries) {
    EXPECT_THAT(e.data, ::testing::Not(HasSubstr("SECRET"))) << e.path;
  }
}

TEST_F(DirectoryFilesTest, ANestedRepositoryIsSkippedWithANote) {
  const fs::path p = MakeRepo();
  fs::create_directories(p / "vendored");
  Git(p / "vendored", "init -q");
  WriteBytes(p / "vendored/lib.py", "y = 2\n");
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(EntryAt(*files, "vendored/lib.py"), nullptr);
  EXPECT_EQ(files->nested_repos, 1);
  EXPECT_THAT(files->change_set.notes,
              ElementsAre("vendored/ skipped: it holds another git repository"));
}

TEST_F(DirectoryFilesTest, TooManyFilesOrBytesStopTheWalkNamingTheBiggest) {
  const fs::path p = dir_ / "plain";
  WriteBytes(p / "a", std::string(10, 'a'));
  WriteBytes(p / "b", std::string(30, 'b'));
  WriteBytes(p / "c", std::string(20, 'c'));
  absl::StatusOr<DirectoryFiles> many = CollectDirectory(p, {.max_files = 2});
  EXPECT_EQ(many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(many.status().message(), HasSubstr("more than 2 files"));
  absl::StatusOr<DirectoryFiles> big = CollectDirectory(p, {.max_total_size = 50});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("biggest: b 30 B, c 20 B, a 10 B"));
}

TEST_F(DirectoryFilesTest, TheBundleUnpacksIntoAnEmptyDirectoryAsTheFilesWere) {
  const fs::path p = MakeRepo();
  fs::create_symlink("train.py", p / "link.py");
  absl::StatusOr<DirectoryFiles> files = CollectDirectory(p);
  ASSERT_TRUE(files.ok()) << files.status();
  const fs::path to = dir_ / "workspace";
  fs::create_directories(to);
  ASSERT_TRUE(Unpack(Encode(files->change_set), to, to).ok());
  EXPECT_EQ(Snapshot(to), Snapshot(p, {"debug.log", "build/out.o", "sub/trace.log"}));
  EXPECT_THAT(files->change_set.notes, IsEmpty());
}

}  // namespace
}  // namespace canhazgpu::changeset
