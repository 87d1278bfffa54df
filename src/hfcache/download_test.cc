// Download() against the fake Hub over real HTTP, into real temp dirs.
#include "hfcache/download.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hfcache/testing/fake_hub.h"

namespace canhazgpu::hfcache {
namespace {
namespace fs = std::filesystem;
using testing::FakeFile;
using testing::FakeHub;
using testing::FakeModel;
using ::testing::HasSubstr;
using testing::RecordedRequest;

const std::string kCommit1 = "1111111111111111111111111111111111111111";
const std::string kCommit2 = "2222222222222222222222222222222222222222";
constexpr uint64_t kBigSize = 3 << 20;
constexpr uint64_t kMiB = 1 << 20;

std::string BigContent(char seed) {
  std::string content(kBigSize, '\0');
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (char& c : content) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return content;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A tiny model: a config, a tokenizer, a nested file and an LFS weight file.
FakeModel TinyModel(const std::string& commit = kCommit1, char seed = 'a') {
  return FakeModel{
      .repo_id = "org/tiny",
      .commit = commit,
      .files = {{.path = "config.json", .content = R"({"model_type":"tiny"})"},
                {.path = "tokenizer.json", .content = R"({"vocab":{"a":0}})"},
                {.path = "nested/dir/notes.txt", .content = "hello\n"},
                {.path = "model.safetensors", .content = BigContent(seed), .lfs = true}}};
}

uint64_t SmallBytes() {
  uint64_t total = 0;
  for (const FakeFile& f : TinyModel().files) {
    if (!f.lfs) total += f.content.size();
  }
  return total;
}

class DownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hfcache_dl.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    hub_.Stop();
    fs::remove_all(root_);
  }

  void StartHub(const FakeModel& model) {
    ASSERT_TRUE(hub_.AddModel(model).ok());
    ASSERT_TRUE(hub_.Start().ok());
  }

  DownloadOptions Options() const {
    DownloadOptions options;
    options.endpoint = hub_.endpoint();
    options.cache_root = root_;
    options.progress_interval = std::chrono::milliseconds(0);
    return options;
  }

  fs::path RepoDir() const { return root_ / "models--org--tiny"; }

  std::vector<RecordedRequest> FileRequests() const {
    std::vector<RecordedRequest> files;
    for (const RecordedRequest& r : hub_.requests()) {
      if (r.path.find("/api/") != 0) files.push_back(r);
    }
    return files;
  }

  std::vector<std::string> Blobs() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(RepoDir() / "blobs")) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  FakeHub hub_{"secret-token"};
  fs::path root_;
};

TEST_F(DownloadTest, WritesTheHubCacheLayoutExactly) {
  StartHub(TinyModel());
  absl::StatusOr<ModelSnapshot> snapshot = Download(ModelRef{.repo_id = "org/tiny"}, Options());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->commit, kCommit1);
  EXPECT_EQ(snapshot->snapshot_dir, RepoDir() / "snapshots" / kCommit1);
  EXPECT_EQ(snapshot->files.size(), 4u);
  EXPECT_EQ(snapshot->size_bytes, SmallBytes() + kBigSize);

  // refs/main holds the commit and nothing else, as huggingface_hub writes it.
  EXPECT_EQ(ReadAll(RepoDir() / "refs" / "main"), kCommit1);
  // Blobs are named by the git blob sha1 (small files) or the sha256 (LFS);
  // "hello\n" is git's well-known ce0136...
  std::vector<std::string> expected_blobs;
  for (const FakeFile& f : TinyModel().files) {
    expected_blobs.push_back(hub_.HashOf("org/tiny", f.path));
  }
  std::sort(expected_blobs.begin(), expected_blobs.end());
  EXPECT_EQ(Blobs(), expected_blobs);
  EXPECT_EQ(hub_.HashOf("org/tiny", "nested/dir/notes.txt"),
            "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(hub_.HashOf("org/tiny", "model.safetensors").size(), 64u);

  const fs::path snap = RepoDir() / "snapshots" / kCommit1;
  for (const FakeFile& f : TinyModel().files) {
    const fs::path link = snap / f.path;
    ASSERT_TRUE(fs::is_symlink(link)) << f.path;
    const std::string up = f.path.find('/') == std::string::npos ? "../../" : "../../../../";
    EXPECT_EQ(fs::read_symlink(link).string(), up + "blobs/" + hub_.HashOf("org/tiny", f.path));
    EXPECT_EQ(ReadAll(link), f.content) << f.path;
  }
  // Nothing but the Hub's folders and ours.
  std::vector<std::string> top;
  for (const auto& entry : fs::directory_iterator(RepoDir())) {
    top.push_back(entry.path().filename().string());
  }
  std::sort(top.begin(), top.end());
  EXPECT_THAT(top, ::testing::ElementsAre(".canhazgpu", "blobs", "refs", "snapshots"));
  // The LFS file went through the CDN redirect.
  bool via_cdn = false;
  for (const RecordedRequest& r : hub_.requests()) via_cdn |= r.path.starts_with("/cdn/");
  EXPECT_TRUE(via_cdn);
  EXPECT_TRUE(FindCached(root_, ModelRef{.repo_id = "org/tiny"}).ok());
}

TEST_F(DownloadTest, ResolvesNamedRevisionsToCommitsAndSharesBlobs) {
  FakeModel old_model = TinyModel(kCommit1, 'a');
  old_model.revisions = {"main", "v1"};
  ASSERT_TRUE(hub_.AddModel(old_model).ok());
  ASSERT_TRUE(hub_.AddModel(TinyModel(kCommit2, 'b')).ok());  // main moves to commit 2
  ASSERT_TRUE(hub_.Start().ok());

  absl::StatusOr<ModelSnapshot> v1 =
      Download(ModelRef{.repo_id = "org/tiny", .revision = "v1"}, Options());
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->commit, kCommit1);
  EXPECT_EQ(ReadAll(RepoDir() / "refs" / "v1"), kCommit1);

  hub_.ClearRequests();
  absl::StatusOr<ModelSnapshot> main = Download(ModelRef{.repo_id = "org/tiny"}, Options());
  ASSERT_TRUE(main.ok()) << main.status();
  EXPECT_EQ(main->commit, kCommit2);
  EXPECT_EQ(ReadAll(RepoDir() / "refs" / "main"), kCommit2);
  // Only the weights differ; the small files' blobs were already there.
  std::vector<RecordedRequest> fetched = FileRequests();
  ASSERT_FALSE(fetched.empty());
  for (const RecordedRequest& r : fetched) {
    EXPECT_TRUE(r.path.ends_with("/model.safetensors") || r.path.starts_with("/cdn/")) << r.path;
  }

  // A commit as the revision writes no ref.
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny", .revision = kCommit1}, Options()).ok());
  EXPECT_FALSE(fs::exists(RepoDir() / "refs" / kCommit1));
  EXPECT_EQ(fs::directory_iterator(RepoDir() / "refs")->path().parent_path(), RepoDir() / "refs");
}

TEST_F(DownloadTest, AllowPatternsSelectFiles) {
  StartHub(TinyModel());
  absl::StatusOr<ModelSnapshot> snapshot =
      Download(ModelRef{.repo_id = "org/tiny", .allow_patterns = {"*.json", "nested/"}}, Options());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->files.size(), 3u);
  EXPECT_EQ(snapshot->size_bytes, SmallBytes());
  EXPECT_FALSE(fs::exists(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"));
  for (const RecordedRequest& r : FileRequests())
    EXPECT_THAT(r.path, ::testing::Not(HasSubstr("safetensors")));
  // Ready for those patterns, not for the whole model.
  EXPECT_TRUE(
      FindCached(root_, ModelRef{.repo_id = "org/tiny", .allow_patterns = {"*.json"}}).ok());
  EXPECT_TRUE(absl::IsNotFound(FindCached(root_, ModelRef{.repo_id = "org/tiny"}).status()));

  absl::StatusOr<ModelSnapshot> none =
      Download(ModelRef{.repo_id = "org/tiny", .allow_patterns = {"*.gguf"}}, Options());
  EXPECT_TRUE(absl::IsInvalidArgument(none.status()));
  EXPECT_THAT(none.status().message(), HasSubstr("matches the allow patterns [*.gguf]"));
}

TEST_F(DownloadTest, WrongHashFailsAndKeepsNothing) {
  FakeModel model = TinyModel();
  model.files.push_back({.path = "broken.bin", .content = "not what the listing says"});
  model.files.back().wrong_hash = true;
  StartHub(model);
  absl::StatusOr<ModelSnapshot> snapshot = Download(ModelRef{.repo_id = "org/tiny"}, Options());
  ASSERT_TRUE(absl::IsDataLoss(snapshot.status())) << snapshot.status();
  EXPECT_THAT(snapshot.status().message(), HasSubstr("file broken.bin of model org/tiny"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("retry"));
  EXPECT_EQ(snapshot.status().message().find('\n'), std::string::npos);
  const std::string listed = hub_.HashOf("org/tiny", "broken.bin");
  EXPECT_FALSE(fs::exists(RepoDir() / "blobs" / listed));
  EXPECT_FALSE(fs::exists(RepoDir() / "blobs" / (listed + ".incomplete")));
  EXPECT_FALSE(fs::exists(RepoDir() / "refs" / "main"));
  EXPECT_FALSE(FindCached(root_, ModelRef{.repo_id = "org/tiny"}).ok());
}

TEST_F(DownloadTest, ResumesACutTransferWithARangeRequest) {
  StartHub(TinyModel());
  hub_.CutNextBody("model.safetensors", kMiB);
  uint64_t most = 0, last = 0, total = 0;
  absl::StatusOr<ModelSnapshot> snapshot =
      Download(ModelRef{.repo_id = "org/tiny"}, Options(), [&](uint64_t d, uint64_t t) {
        most = std::max(most, d);
        last = d;
        total = t;
      });
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // The resumed part is not counted twice.
  EXPECT_EQ(most, total);
  EXPECT_EQ(last, total);
  std::vector<std::string> ranges;
  for (const RecordedRequest& r : FileRequests()) {
    if (!r.range.empty()) ranges.push_back(r.range);
  }
  EXPECT_THAT(ranges, ::testing::Contains("bytes=1048576-"));
  EXPECT_EQ(ReadAll(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"), BigContent('a'));
}

TEST_F(DownloadTest, ResumesAcrossCallsFromTheIncompleteFile) {
  StartHub(TinyModel());
  hub_.CutNextBody("model.safetensors", kMiB);
  DownloadOptions options = Options();
  options.max_attempts = 1;
  absl::StatusOr<ModelSnapshot> first = Download(ModelRef{.repo_id = "org/tiny"}, options);
  ASSERT_TRUE(absl::IsUnavailable(first.status())) << first.status();
  EXPECT_THAT(first.status().message(), HasSubstr("kept for resuming"));
  const fs::path incomplete =
      RepoDir() / "blobs" / (hub_.HashOf("org/tiny", "model.safetensors") + ".incomplete");
  EXPECT_EQ(fs::file_size(incomplete), kMiB);
  EXPECT_FALSE(FindCached(root_, ModelRef{.repo_id = "org/tiny"}).ok());

  hub_.ClearRequests();
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, options).ok());
  std::vector<RecordedRequest> fetched = FileRequests();
  ASSERT_FALSE(fetched.empty());
  EXPECT_EQ(fetched.back().range, "bytes=1048576-");
  EXPECT_FALSE(fs::exists(incomplete));
  EXPECT_EQ(ReadAll(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"), BigContent('a'));
}

// Issue 29 item 3: whoever can write to the cache directory plants a
// symlink where a partial download is resumed; the download must not write
// through it.
TEST_F(DownloadTest, ALinkPlantedAtThePartialDownloadIsNotFollowed) {
  StartHub(TinyModel());
  const fs::path outside = root_ / "outside";
  { std::ofstream(outside) << "precious"; }
  const fs::path blobs = RepoDir() / "blobs";
  fs::create_directories(blobs);
  const fs::path incomplete =
      blobs / (hub_.HashOf("org/tiny", "model.safetensors") + ".incomplete");
  fs::create_symlink(outside, incomplete);
  fs::create_directories(RepoDir() / ".canhazgpu");
  fs::create_symlink(outside, RepoDir() / ".canhazgpu" / "lock");

  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, Options()).ok());
  EXPECT_EQ(ReadAll(outside), "precious");
  EXPECT_FALSE(fs::is_symlink(RepoDir() / ".canhazgpu" / "lock"));
  EXPECT_EQ(ReadAll(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"), BigContent('a'));
}

TEST_F(DownloadTest, StartsOverWhenTheServerIgnoresTheRange) {
  StartHub(TinyModel());
  hub_.CutNextBody("model.safetensors", kMiB);
  DownloadOptions options = Options();
  options.max_attempts = 1;
  ASSERT_FALSE(Download(ModelRef{.repo_id = "org/tiny"}, options).ok());
  hub_.IgnoreRanges(true);
  hub_.ClearRequests();
  uint64_t most = 0, total = 0;
  absl::StatusOr<ModelSnapshot> snapshot =
      Download(ModelRef{.repo_id = "org/tiny"}, options, [&](uint64_t d, uint64_t t) {
        most = std::max(most, d);
        total = t;
      });
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(FileRequests().back().range, "bytes=1048576-");  // asked, but got it all
  EXPECT_EQ(most, total);  // the restarted file is not counted twice
  EXPECT_EQ(ReadAll(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"), BigContent('a'));
}

// Waits (generously) for `condition`; no timing assertions.
template <typename F>
bool WaitFor(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST_F(DownloadTest, ReportsProgressWhileAFileIsStillArriving) {
  StartHub(TinyModel());
  hub_.StallNextBody("model.safetensors", kMiB);
  std::atomic<uint64_t> done{0}, total{0};
  std::atomic<int> calls{0};
  absl::StatusOr<ModelSnapshot> snapshot;
  std::thread worker([&] {
    snapshot = Download(ModelRef{.repo_id = "org/tiny"}, Options(), [&](uint64_t d, uint64_t t) {
      done = d;
      total = t;
      ++calls;
    });
  });
  // The stalled body's first MiB shows while the transfer hangs.
  EXPECT_TRUE(WaitFor([&] { return done.load() >= kMiB; }));
  EXPECT_LT(done.load(), SmallBytes() + kBigSize);
  EXPECT_EQ(total.load(), SmallBytes() + kBigSize);
  hub_.Release();
  worker.join();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(done.load(), total.load());
}

TEST_F(DownloadTest, CancelStopsAStalledTransferAndKeepsItForResuming) {
  StartHub(TinyModel());
  hub_.StallNextBody("model.safetensors", kMiB);
  std::atomic<uint64_t> done{0};
  std::atomic<bool> cancel{false};
  absl::StatusOr<ModelSnapshot> snapshot;
  std::thread worker([&] {
    snapshot = Download(
        ModelRef{.repo_id = "org/tiny"}, Options(), [&](uint64_t d, uint64_t) { done = d; },
        &cancel);
  });
  ASSERT_TRUE(WaitFor([&] { return done.load() >= kMiB; }));
  cancel = true;
  worker.join();  // within about a second: libcurl's progress tick
  EXPECT_TRUE(absl::IsCancelled(snapshot.status())) << snapshot.status();
  EXPECT_THAT(snapshot.status().message(), HasSubstr("cancelled"));
  EXPECT_EQ(fs::file_size(RepoDir() / "blobs" /
                          (hub_.HashOf("org/tiny", "model.safetensors") + ".incomplete")),
            kMiB);
  // An interrupted snapshot is never reported ready.
  EXPECT_TRUE(absl::IsNotFound(FindCached(root_, ModelRef{.repo_id = "org/tiny"}).status()));
}

TEST_F(DownloadTest, ConcurrentDownloadsOfOneModelTakeTurns) {
  StartHub(TinyModel());
  absl::StatusOr<ModelSnapshot> first, second;
  std::thread a([&] { first = Download(ModelRef{.repo_id = "org/tiny"}, Options()); });
  std::thread b([&] { second = Download(ModelRef{.repo_id = "org/tiny"}, Options()); });
  a.join();
  b.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  // The lock let one fetch each file; the other found the blobs verified.
  int weights = 0;
  for (const RecordedRequest& r : FileRequests()) weights += r.path.starts_with("/cdn/");
  EXPECT_EQ(weights, 1);
  EXPECT_EQ(ReadAll(RepoDir() / "snapshots" / kCommit1 / "model.safetensors"), BigContent('a'));
}

TEST_F(DownloadTest, SendsTheTokenAndExplainsWhenItIsMissing) {
  FakeModel model = TinyModel();
  model.private_repo = true;
  StartHub(model);
  DownloadOptions options = Options();
  absl::StatusOr<ModelSnapshot> anonymous = Download(ModelRef{.repo_id = "org/tiny"}, options);
  EXPECT_TRUE(absl::IsUnauthenticated(anonymous.status())) << anonymous.status();
  EXPECT_THAT(anonymous.status().message(),
              HasSubstr("model org/tiny not found, private or gated: set a Hugging Face token"));

  options.token = "wrong";
  absl::StatusOr<ModelSnapshot> wrong = Download(ModelRef{.repo_id = "org/tiny"}, options);
  EXPECT_THAT(wrong.status().message(), HasSubstr("check that the token has access"));

  hub_.ClearRequests();
  options.token = "secret-token";
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, options).ok());
  for (const RecordedRequest& r : hub_.requests()) {
    EXPECT_EQ(r.authorization, "Bearer secret-token") << r.path;
  }
}

TEST_F(DownloadTest, NotFoundAndGatedMessages) {
  FakeModel gated = TinyModel();
  gated.repo_id = "org/gated";
  gated.gated = true;
  ASSERT_TRUE(hub_.AddModel(gated).ok());
  StartHub(TinyModel());
  DownloadOptions options = Options();
  options.token = "secret-token";
  absl::StatusOr<ModelSnapshot> missing = Download(ModelRef{.repo_id = "org/nope"}, options);
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr("model org/nope not found"));

  absl::StatusOr<ModelSnapshot> revision =
      Download(ModelRef{.repo_id = "org/tiny", .revision = "v9"}, options);
  EXPECT_TRUE(absl::IsNotFound(revision.status()));
  EXPECT_THAT(revision.status().message(), HasSubstr("model org/tiny has no revision \"v9\""));

  absl::StatusOr<ModelSnapshot> denied = Download(ModelRef{.repo_id = "org/gated"}, options);
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status()));
  EXPECT_THAT(denied.status().message(), HasSubstr("model org/gated is gated"));

  absl::StatusOr<ModelSnapshot> bad = Download(ModelRef{.repo_id = "not a repo"}, options);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("invalid model id \"not a repo\""));
}

TEST_F(DownloadTest, SecondDownloadMakesNoRequests) {
  StartHub(TinyModel());
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, Options()).ok());
  hub_.ClearRequests();
  uint64_t last_done = 0, last_total = 0;
  absl::StatusOr<ModelSnapshot> again =
      Download(ModelRef{.repo_id = "org/tiny"}, Options(), [&](uint64_t d, uint64_t t) {
        last_done = d;
        last_total = t;
      });
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(hub_.requests().empty());
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, SmallBytes() + kBigSize);

  // Asked to follow the branch: one API request, no file.
  DownloadOptions recheck = Options();
  recheck.recheck_revision = true;
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, recheck).ok());
  ASSERT_EQ(hub_.requests().size(), 1u);
  EXPECT_THAT(hub_.requests()[0].path, HasSubstr("/api/models/org/tiny/revision/main"));
}

TEST_F(DownloadTest, EndpointComesFromTheOptionsOrHfEndpoint) {
  StartHub(TinyModel());
  DownloadOptions options = Options();
  options.endpoint = hub_.endpoint() + "/";  // a trailing slash is fine
  ASSERT_TRUE(Download(ModelRef{.repo_id = "org/tiny"}, options).ok());
  EXPECT_FALSE(hub_.requests().empty());

  setenv("HF_ENDPOINT", "http://mirror.example:8080", 1);
  setenv("HF_HUB_CACHE", "/var/cache/models", 1);
  setenv("HF_TOKEN", "t0k", 1);
  DownloadOptions from_env = OptionsFromEnvironment();
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_TOKEN");
  EXPECT_EQ(from_env.endpoint, "http://mirror.example:8080");
  EXPECT_EQ(from_env.cache_root, "/var/cache/models");
  EXPECT_EQ(from_env.token, "t0k");
  EXPECT_EQ(OptionsFromEnvironment().endpoint, "https://huggingface.co");
}

TEST_F(DownloadTest, UnreachableEndpointIsUnavailable) {
  DownloadOptions options = Options();
  options.endpoint = "http://127.0.0.1:1";
  absl::StatusOr<ModelSnapshot> snapshot = Download(ModelRef{.repo_id = "org/tiny"}, options);
  EXPECT_TRUE(absl::IsUnavailable(snapshot.status())) << snapshot.status();
}

}  // namespace
}  // namespace canhazgpu::hfcache
