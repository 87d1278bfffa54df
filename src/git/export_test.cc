#include "git/export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "git/git.h"
#include "git/testing/command.h"
#include "git/testing/test_repo.h"

namespace canhazgpu::git {
namespace {

namespace fs = std::filesystem;
using ::canhazgpu::git::testing::CommitAll;
using ::canhazgpu::git::testing::Git;
using ::canhazgpu::git::testing::ScopedTempDir;
using ::canhazgpu::git::testing::Snapshot;
using ::canhazgpu::git::testing::WriteFile;
using ::testing::HasSubstr;

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::umask(0027);  // the export's modes must not depend on it
    work_ = temp_.path() / "work";
    testing::InitWorkTree(work_);
    std::string binary;
    for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>(i * 7 % 256));
    WriteFile(work_ / "README.md", "# Title\n\n# not a separator\n");
    WriteFile(work_ / "setup.py", "print('x')\r\nno newline at end");
    WriteFile(work_ / "tools/run.sh", "#!/bin/sh\necho hi\n", /*executable=*/true);
    WriteFile(work_ / "vllm/model.bin", binary);
    WriteFile(work_ / "vllm/__init__.py", "");
    WriteFile(work_ / "deep/a/b/c/d.txt", "deep\n");
    WriteFile(work_ / "with space & ünïcode.txt", "name\n");
    fs::create_symlink("vllm/model.bin", work_ / "model-link");
    fs::create_symlink("../tools", work_ / "deep/tools-link");
    fs::create_symlink("missing/target", work_ / "dangling");
    commit_ = CommitAll(work_, "first");
    umask(022);
  }
  void TearDown() override { ::umask(022); }

  // `dest` holds what `git archive` of `commit` holds: the same paths, kinds
  // and bytes; modes exactly 0644/0755 where git archive leaves them to tar.
  void ExpectSameAsGitArchive(const fs::path& dest, const std::string& commit) {
    const fs::path archived = temp_.path() / ("archived-" + commit);
    const fs::path tar = temp_.path() / ("archive-" + commit + ".tar");
    fs::create_directories(archived);
    Git(work_, {"archive", "--format=tar", "-o", tar.string(), commit});
    ASSERT_EQ(testing::RunCommand({"tar", "-xf", tar.string(), "-C", archived.string()}).exit_code,
              0);
    auto ours = Snapshot(dest);
    auto theirs = Snapshot(archived);
    fs::remove_all(archived);
    fs::remove(tar);
    ASSERT_EQ(ours.size(), theirs.size());
    for (const auto& [path, entry] : theirs) {
      ASSERT_TRUE(ours.count(path)) << path;
      const testing::Entry& mine = ours.at(path);
      EXPECT_EQ(mine.kind, entry.kind) << path;
      EXPECT_EQ(mine.data, entry.data) << path;
      if (entry.kind == 'f') {
        EXPECT_EQ(mine.mode, (entry.mode & 0100) ? 0755u : 0644u) << path;
      } else if (entry.kind == 'd') {
        EXPECT_EQ(mine.mode, 0755u) << path;
      }
    }
  }

  ScopedTempDir temp_{"export_test"};
  fs::path work_;
  std::string commit_;
};

TEST_F(ExportTest, EqualsGitArchiveOfTheSameCommitByteForByte) {
  ::umask(0077);
  const fs::path dest = temp_.path() / "export";
  absl::Status status = ExportCommit(work_, commit_, dest);
  ::umask(022);
  ASSERT_TRUE(status.ok()) << status;

  ExpectSameAsGitArchive(dest, commit_);
  auto ours = Snapshot(dest);
  EXPECT_EQ(ours.at("tools/run.sh").mode, 0755u);
  EXPECT_EQ(ours.at("model-link").kind, 'l');
  EXPECT_EQ(ours.at("model-link").data, "vllm/model.bin");
  EXPECT_EQ(ours.at("dangling").data, "missing/target");
  EXPECT_EQ(ours.at("vllm/model.bin").data.size(), 4096u);
  EXPECT_FALSE(fs::exists(dest / ".git"));
  struct stat st;
  ASSERT_EQ(stat(dest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(ExportTest, RefusesAnExistingDestinationAndAnUnknownCommit) {
  const fs::path dest = temp_.path() / "exists";
  fs::create_directories(dest);
  absl::Status exists = ExportCommit(work_, commit_, dest);
  EXPECT_EQ(exists.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(exists.message(), HasSubstr(dest.string()));

  const std::string unknown(40, 'a');
  absl::Status missing = ExportCommit(work_, unknown, temp_.path() / "fresh");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr(unknown));
  EXPECT_FALSE(fs::exists(temp_.path() / "fresh"));

  EXPECT_EQ(ExportCommit(work_, "main", temp_.path() / "fresh").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ExportTest, LeftoversOfAnInterruptedExportAreClearedAndNeverTakenForTheResult) {
  const fs::path dest = temp_.path() / "ws";
  // What a killed export leaves: a partial temporary directory beside dest.
  const fs::path leftover = temp_.path() / ".ws.exporting-999999-0";
  WriteFile(leftover / "README.md", "partial");
  ASSERT_FALSE(fs::exists(dest));

  absl::Status status = ExportCommit(work_, commit_, dest);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_EQ(Snapshot(dest).at("README.md").data, "# Title\n\n# not a separator\n");
  // Only dest and the work tree remain: no temporary directory either.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(temp_.path())) ++entries;
  EXPECT_EQ(entries, 2);
}

TEST_F(ExportTest, ATreeEntryThatWouldEscapeIsRefusedAndNothingIsLeft) {
  // A tree git's own tools would never write, crafted object by object:
  // an entry named ".." holding a file.
  absl::StatusOr<Repository> repository = Open(work_);
  ASSERT_TRUE(repository.ok()) << repository.status();
  git_odb* raw_odb = nullptr;
  ASSERT_EQ(git_repository_odb(&raw_odb, repository->get()), 0);
  Odb odb(raw_odb);
  git_oid blob, tree, commit;
  ASSERT_EQ(git_odb_write(&blob, odb.get(), "evil\n", 5, GIT_OBJECT_BLOB), 0);
  std::string tree_bytes = "100644 ..";
  tree_bytes.push_back('\0');
  tree_bytes.append(reinterpret_cast<const char*>(blob.id), GIT_OID_RAWSZ);
  ASSERT_EQ(git_odb_write(&tree, odb.get(), tree_bytes.data(), tree_bytes.size(), GIT_OBJECT_TREE),
            0);
  const std::string commit_bytes =
      "tree " + ToHex(tree) + "\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nx\n";
  ASSERT_EQ(git_odb_write(&commit, odb.get(), commit_bytes.data(), commit_bytes.size(),
                          GIT_OBJECT_COMMIT),
            0);

  const fs::path dest = temp_.path() / "evil";
  absl::Status status = ExportCommit(work_, ToHex(commit), dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("refusing to export the tree entry '..'"));
  EXPECT_FALSE(fs::exists(dest));
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(temp_.path())) ++entries;
  EXPECT_EQ(entries, 1);  // the work tree only
}

TEST_F(ExportTest, ManyFilesAreWrittenBySeveralThreadsExactly) {
  // Enough files for the parallel writers (one thread per 256 files).
  for (int i = 0; i < 600; ++i) {
    WriteFile(work_ / ("pkg" + std::to_string(i % 37)) / ("m" + std::to_string(i) + ".py"),
              std::string(static_cast<size_t>(i % 300), static_cast<char>('a' + i % 26)) + "\n",
              /*executable=*/i % 50 == 0);
  }
  const std::string commit = CommitAll(work_, "many");
  const fs::path dest = temp_.path() / "many";
  ::umask(0077);
  absl::Status status = ExportCommit(work_, commit, dest);
  ::umask(022);
  ASSERT_TRUE(status.ok()) << status;
  ExpectSameAsGitArchive(dest, commit);
}

TEST_F(ExportTest, AMissingObjectFailsTheExportAndLeavesNothing) {
  // A tree whose file's blob is not in the repository (a damaged mirror).
  absl::StatusOr<Repository> repository = Open(work_);
  ASSERT_TRUE(repository.ok()) << repository.status();
  git_odb* raw_odb = nullptr;
  ASSERT_EQ(git_repository_odb(&raw_odb, repository->get()), 0);
  Odb odb(raw_odb);
  git_oid absent, tree, commit;
  ASSERT_EQ(git_oid_fromstr(&absent, "1111111111111111111111111111111111111111"), 0);
  std::string tree_bytes = "100644 lost.txt";
  tree_bytes.push_back('\0');
  tree_bytes.append(reinterpret_cast<const char*>(absent.id), GIT_OID_RAWSZ);
  ASSERT_EQ(git_odb_write(&tree, odb.get(), tree_bytes.data(), tree_bytes.size(), GIT_OBJECT_TREE),
            0);
  const std::string commit_bytes =
      "tree " + ToHex(tree) + "\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nx\n";
  ASSERT_EQ(git_odb_write(&commit, odb.get(), commit_bytes.data(), commit_bytes.size(),
                          GIT_OBJECT_COMMIT),
            0);
  const fs::path dest = temp_.path() / "damaged";
  absl::Status status = ExportCommit(work_, ToHex(commit), dest);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("reading file lost.txt"));
  EXPECT_FALSE(fs::exists(dest));
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(temp_.path())) ++entries;
  EXPECT_EQ(entries, 1);  // the work tree only
}

}  // namespace
}  // namespace canhazgpu::git
