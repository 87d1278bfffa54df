#include "changeset/change_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "changeset/bundle.h"
#include "changeset/testing/git_fixture.h"
#include "changeset/testing/temp_dir.h"
#include "changeset/unpack.h"
#include "changeset/vllm_checkout.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace testing;  // NOLINT: the fixture helpers

// Python whose comments start in column 0 with "# " (the prototype cut
// untracked files at such a line), and a binary file with NUL bytes.
const char kPythonWithComments[] =
    "# Copyright vLLM\n# New file: not a marker\nimport os\n\n# top-level comment\n"
    "def f():\n    return 1\n\n\n";
std::string BinaryBytes() {
  std::string bytes;
  for (int i = 0; i < 3000; ++i) bytes.push_back(static_cast<char>(i * 7 % 256));
  bytes += std::string("\0\0\0# \n\r\n", 8);
  return bytes;
}

class ChangeSetTest : public TempDirTest {
 protected:
  // A checkout with every kind of change there is; returns the merge-base.
  std::string MakeEveryKindOfChange() {
    vllm_ = MakeFakeVllm(dir_, "up",
                         {{"vllm/engine/llm_engine.py", "class LLMEngine:\n    pass\n"},
                          {"vllm/old_name.py", "moved = True\n"},
                          {"vllm/gone.py", "deleted = True\n"},
                          {"vllm/staged.py", "staged = 0\n"},
                          {"vllm/both.py", "both = 0\n"},
                          {"tools/run.sh", "#!/bin/sh\necho run\n"},
                          {"csrc/ops.cu", "__global__ void k() {}\n"},
                          {".gitignore", "*.log\nbuild/\n"}});
    const fs::path w = vllm_.work;
    const std::string base = GitLine(w, "rev-parse HEAD");
    Git(w, "checkout -q -b feature");
    // An unpushed commit: an edit, a rename, a deletion and a symlink.
    WriteBytes(w / "vllm/engine/llm_engine.py", "class LLMEngine:\n    fast = True\n");
    Git(w, "mv vllm/old_name.py vllm/new_name.py");
    Git(w, "rm -q vllm/gone.py");
    fs::create_symlink("engine/llm_engine.py", w / "vllm/engine_link.py");
    Git(w, "add -A");
    Git(w, "commit -q -m unpushed");
    // Staged only.
    WriteBytes(w / "vllm/staged.py", "staged = 1\n");
    Git(w, "add vllm/staged.py");
    // Staged, then edited again on top.
    WriteBytes(w / "vllm/both.py", "both = 1\n");
    Git(w, "add vllm/both.py");
    WriteBytes(w / "vllm/both.py", "both = 2\n# unstaged on top\n");
    // Unstaged edits: a mode change, compiled code, a binary file.
    fs::permissions(w / "tools/run.sh",
                    fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    WriteBytes(w / "csrc/ops.cu", "__global__ void k() { /* faster */ }\n");
    WriteBytes(w / "vllm/weights.bin", BinaryBytes());
    // Untracked, in a new directory; and ignored files, which stay home.
    WriteBytes(w / "vllm/new_dir/deeper/comments.py", kPythonWithComments);
    WriteBytes(w / "debug.log", "ignored\n");
    WriteBytes(w / "build/out.o", "ignored too\n");
    return base;
  }

  FakeVllm vllm_;
};

TEST_F(ChangeSetTest, UnpackedTreeEqualsTheWorkTreeByteForByteAndModeForMode) {
  const std::string base = MakeEveryKindOfChange();
  absl::StatusOr<ChangeSet> change_set = CollectChangeSet(vllm_.work, base);
  ASSERT_TRUE(change_set.ok()) << change_set.status();
  EXPECT_EQ(change_set->base_commit, base);
  const std::string bundle = Encode(*change_set);

  // The merge-base as the pod gets it: a plain export, no .git.
  const fs::path exported = dir_ / "base";
  fs::create_directories(exported);
  Shell("git -C " + Quote(vllm_.work.string()) + " -c tar.umask=022 archive " + base +
        " | tar -x -C " + Quote(exported.string()));
  const fs::path target = dir_ / "pod" / "workspace";
  absl::Status unpacked = Unpack(bundle, exported, target);
  ASSERT_TRUE(unpacked.ok()) << unpacked;

  const std::set<std::string> ignored = {"debug.log", "build/out.o", "build"};
  std::map<std::string, std::string> want = Snapshot(vllm_.work, ignored);
  std::map<std::string, std::string> got = Snapshot(target);
  EXPECT_EQ(got, want);
  // Spot checks of what the comparison covers.
  EXPECT_EQ(ReadBytes(target / "vllm/new_dir/deeper/comments.py"), kPythonWithComments);
  EXPECT_EQ(ReadBytes(target / "vllm/weights.bin"), BinaryBytes());
  EXPECT_EQ(got["tools/run.sh"].substr(0, 7), "f 0755 ");
  EXPECT_EQ(got["vllm/engine_link.py"], "l engine/llm_engine.py");
  EXPECT_FALSE(got.contains("vllm/gone.py"));
  EXPECT_FALSE(got.contains("vllm/old_name.py"));
  EXPECT_FALSE(got.contains("debug.log"));

  // Durable writes (fsync of every file) give the same.
  const fs::path synced = dir_ / "synced";
  ASSERT_TRUE(Unpack(bundle, exported, synced, UnpackOptions{.sync = true}).ok());
  EXPECT_EQ(Snapshot(synced), want);

  // In place gives the same.
  ASSERT_TRUE(Unpack(bundle, exported, exported).ok());
  EXPECT_EQ(Snapshot(exported), want);
}

TEST_F(ChangeSetTest, EntriesSayWhatEachPathBecomesAndNothingIgnoredIsPacked) {
  const std::string base = MakeEveryKindOfChange();
  absl::StatusOr<ChangeSet> change_set = CollectChangeSet(vllm_.work, base);
  ASSERT_TRUE(change_set.ok()) << change_set.status();
  std::map<std::string, const ChangeEntry*> by_path;
  for (const ChangeEntry& e : change_set->entries) by_path[e.path] = &e;
  std::vector<std::string> paths;
  for (const auto& [path, e] : by_path) paths.push_back(path);
  EXPECT_THAT(paths, ElementsAre("csrc/ops.cu", "tools/run.sh", "vllm/both.py",
                                 "vllm/engine/llm_engine.py", "vllm/engine_link.py", "vllm/gone.py",
                                 "vllm/new_dir/deeper/comments.py", "vllm/new_name.py",
                                 "vllm/old_name.py", "vllm/staged.py", "vllm/weights.bin"));
  EXPECT_EQ(by_path["vllm/gone.py"]->kind, EntryKind::kDeleted);
  EXPECT_TRUE(by_path["vllm/gone.py"]->base_blob.has_value());
  EXPECT_FALSE(by_path["vllm/new_name.py"]->base_blob.has_value());
  EXPECT_EQ(by_path["vllm/new_name.py"]->data, "moved = True\n");
  EXPECT_EQ(by_path["vllm/engine_link.py"]->kind, EntryKind::kSymlink);
  EXPECT_EQ(by_path["tools/run.sh"]->mode, 0755u);
  EXPECT_EQ(by_path["vllm/both.py"]->data, "both = 2\n# unstaged on top\n");
  EXPECT_EQ(by_path["vllm/staged.py"]->data, "staged = 1\n");
  // The base blob is git's own id for the base content.
  EXPECT_EQ(git::ToHex(*by_path["vllm/staged.py"]->base_blob),
            GitLine(vllm_.work, "rev-parse " + base + ":vllm/staged.py"));

  Summary summary = Summarize(*change_set);
  EXPECT_EQ(summary.added, 4);  // new_name, engine_link, comments.py, weights.bin
  EXPECT_EQ(summary.modified, 5);
  EXPECT_EQ(summary.deleted, 2);
  EXPECT_EQ(summary.symlinks, 1);
  ASSERT_FALSE(summary.biggest.empty());
  EXPECT_EQ(summary.biggest[0].path, "vllm/weights.bin");
  const std::string text = FormatSummary(summary);
  EXPECT_THAT(text, HasSubstr("merge-base " + base));
  EXPECT_THAT(text, HasSubstr("vllm/weights.bin"));
}

TEST_F(ChangeSetTest, AWorkTreeEqualToTheBaseIsAnEmptyChangeSet) {
  vllm_ = MakeFakeVllm(dir_, "up", {{"vllm/a.py", "a = 1\n"}});
  const std::string base = GitLine(vllm_.work, "rev-parse HEAD");
  // Staged, then put back in the work tree: nothing differs on disk.
  WriteBytes(vllm_.work / "vllm/a.py", "a = 2\n");
  Git(vllm_.work, "add vllm/a.py");
  WriteBytes(vllm_.work / "vllm/a.py", "a = 1\n");
  // Touched without a change.
  fs::last_write_time(vllm_.work / "README.md", fs::file_time_type::clock::now());
  absl::StatusOr<ChangeSet> change_set = CollectChangeSet(vllm_.work, base);
  ASSERT_TRUE(change_set.ok()) << change_set.status();
  EXPECT_THAT(change_set->entries, IsEmpty());
}

TEST_F(ChangeSetTest, ASubmoduleIsSkippedWithANote) {
  vllm_ = MakeFakeVllm(dir_);
  const std::string base = GitLine(vllm_.work, "rev-parse HEAD");
  Git(vllm_.work, "update-index --add --cacheinfo 160000," + base + ",third_party/sub");
  Git(vllm_.work, "commit -q -m submodule");
  absl::StatusOr<ChangeSet> change_set = CollectChangeSet(vllm_.work, base);
  ASSERT_TRUE(change_set.ok()) << change_set.status();
  EXPECT_THAT(change_set->entries, IsEmpty());
  EXPECT_THAT(change_set->notes,
              ElementsAre("submodule third_party/sub skipped: submodules are not packed"));
  EXPECT_THAT(FormatSummary(Summarize(*change_set)), HasSubstr("note: submodule third_party/sub"));
}

TEST(TouchesCompiledCodeTest, NamesCudaCppCMakeAndSetupPyButNotPython) {
  ChangeSet change_set;
  for (const char* path :
       {"csrc/attention/x.py", "vllm/a.py", "kernels/k.cu", "kernels/k.cuh", "x/y.cpp", "x/y.cc",
        "x/y.c", "x/y.h", "x/y.hpp", "CMakeLists.txt", "sub/CMakeLists.txt", "cmake/utils.cmake",
        "setup.py", "vllm/setup.py", "docs/cmake.md"}) {
    change_set.entries.push_back({.path = path, .kind = EntryKind::kFile, .mode = 0644});
  }
  EXPECT_THAT(TouchesCompiledCode(change_set),
              ElementsAre("CMakeLists.txt", "cmake/utils.cmake", "csrc/attention/x.py",
                          "kernels/k.cu", "kernels/k.cuh", "setup.py", "sub/CMakeLists.txt",
                          "x/y.c", "x/y.cc", "x/y.cpp", "x/y.h", "x/y.hpp"));
}

TEST(FormatBytesTest, ReadsAsPeopleWriteSizes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(40 * 1024 * 1024 + 200 * 1024), "40.2 MiB");
}

}  // namespace
}  // namespace canhazgpu::changeset
