// The mirror against a local bare repository, reached over file:// and over
// smart HTTP from the test server (the same scenarios on both transports).
#include "git/mirror.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>

#include "git/export.h"
#include "git/testing/command.h"
#include "git/testing/git_http_server.h"
#include "git/testing/test_repo.h"
#include "host/testing/fake_clock.h"

namespace canhazgpu::git {
namespace {

namespace fs = std::filesystem;
using ::canhazgpu::git::testing::CommitAll;
using ::canhazgpu::git::testing::Git;
using ::canhazgpu::git::testing::GitHttpServer;
using ::canhazgpu::git::testing::ScopedTempDir;
using ::canhazgpu::git::testing::Snapshot;
using ::canhazgpu::git::testing::WriteFile;
using ::testing::HasSubstr;

enum class Transport { kFile, kHttp };

class MirrorTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    remote_ = temp_.path() / "served" / "team" / "vllm.git";
    testing::InitBare(remote_);
    work_ = temp_.path() / "work";
    testing::InitWorkTree(work_);
    Git(work_, {"remote", "add", "origin", remote_.string()});
    WriteFile(work_ / "vllm/__init__.py", "version = 1\n");
    first_ = CommitAll(work_, "first");
    Git(work_, {"tag", "v1"});
    Git(work_, {"tag", "-a", "v1-annotated", "-m", "release"});
    Git(work_, {"push", "-q", "origin", "main", "--tags"});
    if (GetParam() == Transport::kHttp) {
      server_ = std::make_unique<GitHttpServer>(temp_.path() / "served");
      url_ = server_->Url("team/vllm.git");
    } else {
      url_ = "file://" + remote_.string();
    }
    cache_ = temp_.path() / "cache";
  }

  Mirror OpenMirror() {
    absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(cache_, url_, clock_);
    EXPECT_TRUE(mirror.ok()) << mirror.status();
    return *std::move(mirror);
  }

  std::string Commit(const std::string& file, const std::string& text) {
    WriteFile(work_ / file, text);
    return CommitAll(work_, "change " + file);
  }

  ScopedTempDir temp_{"mirror_test"};
  canhazgpu::host::FakeClock clock_;
  fs::path remote_, work_, cache_;
  std::unique_ptr<GitHttpServer> server_;
  std::string url_, first_;
};

TEST_P(MirrorTest, FirstFetchBringsBranchesAndTagsAndResolvesThem) {
  Mirror mirror = OpenMirror();
  EXPECT_EQ(mirror.path(), cache_ / MirrorDirName(url_));
  EXPECT_FALSE(mirror.LastFetch().has_value());
  EXPECT_FALSE(mirror.HasCommit(first_));
  ASSERT_TRUE(mirror.Fetch({}).ok());

  EXPECT_EQ(*mirror.LastFetch(), clock_.Now());
  EXPECT_TRUE(mirror.HasCommit(first_));
  EXPECT_EQ(*mirror.Resolve("main"), first_);
  EXPECT_EQ(*mirror.Resolve("refs/heads/main"), first_);
  EXPECT_EQ(*mirror.Resolve("v1"), first_);
  EXPECT_EQ(*mirror.Resolve("v1-annotated"), first_);  // peeled to the commit
  EXPECT_EQ(*mirror.Resolve(first_), first_);
  EXPECT_TRUE(git_repository_is_bare(mirror.repository()));
}

TEST_P(MirrorTest, ResolveSaysWhatIsMissingAndWhatToDo) {
  Mirror mirror = OpenMirror();
  ASSERT_TRUE(mirror.Fetch({}).ok());
  const std::string absent = "0123456789abcdef0123456789abcdef01234567";
  absl::StatusOr<std::string> commit = mirror.Resolve(absent);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(commit.status().message(),
            "commit " + absent + " is not in the mirror of " + url_ + "; fetch first");
  EXPECT_FALSE(mirror.HasCommit(absent));
  EXPECT_FALSE(mirror.HasCommit("main"));

  absl::StatusOr<std::string> branch = mirror.Resolve("no-such-branch");
  EXPECT_EQ(branch.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(branch.status().message(), HasSubstr("no branch or tag 'no-such-branch'"));
  EXPECT_THAT(branch.status().message(), HasSubstr(url_));
}

TEST_P(MirrorTest, RefetchFollowsNewCommitsForcePushesDeletionsAndMovedTags) {
  Mirror mirror = OpenMirror();
  Git(work_, {"checkout", "-q", "-b", "doomed"});
  Git(work_, {"push", "-q", "origin", "doomed"});
  Git(work_, {"checkout", "-q", "main"});
  ASSERT_TRUE(mirror.Fetch({}).ok());
  ASSERT_TRUE(mirror.Resolve("doomed").ok());

  const std::string second = Commit("a.txt", "a\n");
  Git(work_, {"push", "-q", "origin", "main"});
  Git(work_, {"push", "-q", "origin", "--delete", "doomed"});
  clock_.Advance(std::chrono::minutes(5));
  ASSERT_TRUE(mirror.Fetch({}).ok());
  EXPECT_EQ(*mirror.Resolve("main"), second);
  EXPECT_EQ(mirror.Resolve("doomed").status().code(), absl::StatusCode::kNotFound);  // pruned
  EXPECT_EQ(*mirror.LastFetch(), clock_.Now());

  // History rewritten upstream: the mirror follows (+ in the refspec).
  Git(work_, {"reset", "-q", "--hard", first_});
  const std::string rewritten = Commit("b.txt", "b\n");
  Git(work_, {"push", "-q", "--force", "origin", "main"});
  Git(work_, {"tag", "-f", "v1", rewritten});
  Git(work_, {"push", "-q", "--force", "origin", "v1"});
  ASSERT_TRUE(mirror.Fetch({}).ok());
  EXPECT_EQ(*mirror.Resolve("main"), rewritten);
  EXPECT_EQ(*mirror.Resolve("v1"), rewritten);
  // The old commit stays resolvable by id until garbage collection.
  EXPECT_TRUE(mirror.HasCommit(second));
}

TEST_P(MirrorTest, TwoBranchesOfOneUrlCoexistAndExportSeparately) {
  Git(work_, {"checkout", "-q", "-b", "feature"});
  const std::string feature = Commit("vllm/__init__.py", "version = 2\n");
  Git(work_, {"push", "-q", "origin", "feature"});
  Mirror mirror = OpenMirror();
  ASSERT_TRUE(mirror.Fetch({}).ok());
  ASSERT_EQ(*mirror.Resolve("main"), first_);
  ASSERT_EQ(*mirror.Resolve("feature"), feature);

  ASSERT_TRUE(ExportCommit(mirror.path(), *mirror.Resolve("main"), temp_.path() / "m").ok());
  ASSERT_TRUE(ExportCommit(mirror.path(), *mirror.Resolve("feature"), temp_.path() / "f").ok());
  EXPECT_EQ(Snapshot(temp_.path() / "m").at("vllm/__init__.py").data, "version = 1\n");
  EXPECT_EQ(Snapshot(temp_.path() / "f").at("vllm/__init__.py").data, "version = 2\n");
}

TEST_P(MirrorTest, ProgressIsReportedUpToTheTotal) {
  for (int i = 0; i < 20; ++i)
    WriteFile(work_ / ("f" + std::to_string(i)), std::string(1000, 'a' + i));
  CommitAll(work_, "many");
  Git(work_, {"push", "-q", "origin", "main"});
  std::vector<FetchProgress> reports;
  Mirror mirror = OpenMirror();
  FetchOptions options;
  options.progress = [&](const FetchProgress& p) { reports.push_back(p); };
  ASSERT_TRUE(mirror.Fetch(options).ok());
  ASSERT_FALSE(reports.empty());
  const FetchProgress& last = reports.back();
  EXPECT_GT(last.total_objects, 20u);
  EXPECT_EQ(last.received_objects, last.total_objects);
  EXPECT_GT(last.received_bytes, 0u);
  for (size_t i = 1; i < reports.size(); ++i) {
    EXPECT_GE(reports[i].received_objects, reports[i - 1].received_objects);
  }
}

TEST_P(MirrorTest, CancelStopsTheFetchAndTheNextFetchStillWorks) {
  Mirror mirror = OpenMirror();
  std::atomic<bool> cancel{true};
  FetchOptions options;
  options.cancel = &cancel;
  absl::Status before = mirror.Fetch(options);
  EXPECT_EQ(before.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(before.message(), HasSubstr(url_));

  cancel = false;
  int calls = 0;
  options.progress = [&](const FetchProgress&) {
    ++calls;
    cancel = true;  // cancelled from the middle of the transfer
  };
  absl::Status during = mirror.Fetch(options);
  EXPECT_EQ(during.code(), absl::StatusCode::kCancelled) << during;
  EXPECT_GE(calls, 1);
  EXPECT_FALSE(mirror.LastFetch().has_value());

  cancel = false;
  options.progress = nullptr;
  ASSERT_TRUE(mirror.Fetch(options).ok());
  EXPECT_EQ(*mirror.Resolve("main"), first_);
}

TEST_P(MirrorTest, AHalfCreatedMirrorIsRecreated) {
  // A directory with the mirror's name that is not a mirror: only a HEAD.
  WriteFile(cache_ / MirrorDirName(url_) / "HEAD", "ref: refs/heads/main\n");
  // And a creation that never reached its rename.
  WriteFile(cache_ / ("." + MirrorDirName(url_) + ".creating-1-0") / "config", "partial");
  Mirror mirror = OpenMirror();
  ASSERT_TRUE(mirror.Fetch({}).ok());
  EXPECT_EQ(*mirror.Resolve("main"), first_);
  EXPECT_FALSE(fs::exists(cache_ / ("." + MirrorDirName(url_) + ".creating-1-0")));
}

TEST_P(MirrorTest, LeftoversOfAnInterruptedFetchDoNotBlockTheNext) {
  {
    Mirror mirror = OpenMirror();
    ASSERT_TRUE(mirror.Fetch({}).ok());
  }
  // What a fetch killed mid-way leaves: a ref lock and a half-written pack.
  const fs::path dir = cache_ / MirrorDirName(url_);
  WriteFile(dir / "refs/heads/main.lock", "0000000000000000000000000000000000000000\n");
  WriteFile(dir / "packed-refs.lock", "");
  WriteFile(dir / "objects/pack/pack_git2_abcdef", "garbage");
  const std::string second = Commit("c.txt", "c\n");
  Git(work_, {"push", "-q", "origin", "main"});

  Mirror mirror = OpenMirror();
  absl::Status status = mirror.Fetch({});
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(*mirror.Resolve("main"), second);
  EXPECT_FALSE(fs::exists(dir / "objects/pack/pack_git2_abcdef"));
}

TEST_P(MirrorTest, ADirectoryHoldingAnotherUrlsMirrorIsNeverTakenOver) {
  const std::string other = url_ + "-fork";
  {
    absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(cache_, other, clock_);
    ASSERT_TRUE(mirror.ok()) << mirror.status();
  }
  fs::rename(cache_ / MirrorDirName(other), cache_ / MirrorDirName(url_));
  absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(cache_, url_, clock_);
  EXPECT_EQ(mirror.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(mirror.status().message(), HasSubstr("holds the mirror of " + other));
  EXPECT_TRUE(fs::exists(cache_ / MirrorDirName(url_) / "config"));
}

TEST_P(MirrorTest, ConcurrentCreationsAndFetchesOfOneUrlTakeTurns) {
  // Four workers of a node agent (or four processes) asking for the same
  // repository at once, before any mirror exists.
  std::vector<absl::Status> results(4);
  std::vector<std::thread> workers;
  for (size_t i = 0; i < results.size(); ++i) {
    workers.emplace_back([&, i] {
      absl::StatusOr<Mirror> mirror = Mirror::OpenOrCreate(cache_, url_, clock_);
      results[i] = mirror.ok() ? mirror->Fetch({}) : mirror.status();
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const absl::Status& result : results) EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(*OpenMirror().Resolve("main"), first_);
  int entries = 0;  // the mirror and its lock file, nothing half-made
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(cache_)) ++entries;
  EXPECT_EQ(entries, 2);
}

TEST_P(MirrorTest, RemoveMirrorDeletesItAndTheNextOpenStartsEmpty) {
  {
    Mirror mirror = OpenMirror();
    ASSERT_TRUE(mirror.Fetch({}).ok());
  }
  ASSERT_TRUE(RemoveMirror(cache_, url_).ok());
  EXPECT_FALSE(fs::exists(cache_ / MirrorDirName(url_)));
  EXPECT_TRUE(RemoveMirror(cache_, url_).ok());  // nothing left: still fine
  Mirror mirror = OpenMirror();
  EXPECT_FALSE(mirror.HasCommit(first_));
  EXPECT_FALSE(mirror.LastFetch().has_value());
}

INSTANTIATE_TEST_SUITE_P(Transports, MirrorTest,
                         ::testing::Values(Transport::kFile, Transport::kHttp),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return info.param == Transport::kFile ? "File" : "Http";
                         });

TEST(MirrorDirName, ReadableStableAndDistinctPerUrl) {
  const std::string name = MirrorDirName("https://github.com/vllm-project/vllm.git");
  EXPECT_THAT(name, ::testing::StartsWith("github.com-vllm-project-vllm-"));
  EXPECT_EQ(name.size(), std::string("github.com-vllm-project-vllm-").size() + 8);
  EXPECT_EQ(name, MirrorDirName("https://github.com/vllm-project/vllm.git"));
  // Pinned: the name must not change between releases, or every node would
  // fetch its mirrors again. The hash is git's blob id of the URL
  // (`printf %s URL | git hash-object --stdin`).
  EXPECT_EQ(name, "github.com-vllm-project-vllm-f4a6c762");

  std::set<std::string> names;
  for (const char* url :
       {"https://github.com/vllm-project/vllm.git", "https://github.com/vllm-project/vllm",
        "https://github.com/alice/vllm.git", "https://github.com/bob/vllm.git",
        "git@github.com:vllm-project/vllm.git", "ssh://git@github.com/vllm-project/vllm.git",
        "https://gitlab.com/vllm-project/vllm.git"}) {
    names.insert(MirrorDirName(url));
  }
  EXPECT_EQ(names.size(), 7u);
}

TEST(MirrorDirName, KeepsSecretsAndPathTricksOut) {
  const std::string with_token = MirrorDirName("https://user:s3cret@git.example/a/b.git");
  EXPECT_THAT(with_token, ::testing::StartsWith("git.example-a-b-"));
  EXPECT_EQ(with_token.find("s3cret"), std::string::npos);
  EXPECT_THAT(MirrorDirName("git@host.example:team/repo.git"),
              ::testing::StartsWith("host.example-team-repo-"));
  for (const char* url : {"file:///../../etc", "..", "./.", "https:///", ""}) {
    const std::string dir = MirrorDirName(url);
    EXPECT_NE(dir.front(), '.') << url;
    EXPECT_EQ(dir.find('/'), std::string::npos) << url;
  }
  EXPECT_LE(MirrorDirName("https://x.example/" + std::string(500, 'a')).size(), 80u + 9u);
}

}  // namespace
}  // namespace canhazgpu::git
