#include "hfcache/hub_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "hfcache/hub_api.h"

namespace canhazgpu::hfcache {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hfcache_test.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) abort();
    path_ = tmpl;
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const std::string kCommit = std::string(40, 'a');

void WriteBlob(const RepoCache& cache, const RepoFile& file) {
  fs::create_directories(cache.BlobPath(file.hash).parent_path());
  std::ofstream(cache.BlobPath(file.hash)) << std::string(file.size, 'x');
}

TEST(LinkTargetTest, RelativeWithOneLevelPerDirectory) {
  EXPECT_EQ(RepoCache::LinkTarget("config.json", "abc"), "../../blobs/abc");
  EXPECT_EQ(RepoCache::LinkTarget("a/b/c.bin", "abc"), "../../../../blobs/abc");
}

TEST(FindCachedTest, CompleteOnlyWithRecordLinksAndBlobs) {
  TempDir dir;
  const RepoCache cache(dir.path(), "org/m");
  const RepoFile config{.path = "config.json", .hash = std::string(40, '1'), .size = 3};
  const RepoFile weights{
      .path = "w/model.bin", .hash = std::string(64, '2'), .kind = HashKind::kSha256, .size = 5};
  const ModelRef ref{.repo_id = "org/m"};

  EXPECT_TRUE(absl::IsNotFound(FindCached(dir.path(), ref).status()));  // nothing at all
  ASSERT_TRUE(cache.WriteRef("main", kCommit).ok());
  WriteBlob(cache, config);
  WriteBlob(cache, weights);
  ASSERT_TRUE(cache.Link(kCommit, config).ok());
  ASSERT_TRUE(cache.Link(kCommit, weights).ok());
  // Every file there, but the download never finished: not ready.
  absl::StatusOr<ModelSnapshot> found = FindCached(dir.path(), ref);
  EXPECT_TRUE(absl::IsNotFound(found.status()));
  EXPECT_NE(found.status().message().find("never finished"), std::string::npos);

  ASSERT_TRUE(cache.WriteManifest(RepoListing{.commit = kCommit, .files = {config, weights}}).ok());
  found = FindCached(dir.path(), ref);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->commit, kCommit);
  EXPECT_EQ(found->size_bytes, 8u);
  EXPECT_EQ(found->snapshot_dir, dir.path() / "models--org--m" / "snapshots" / kCommit);
  EXPECT_TRUE(FindCached(dir.path(), ModelRef{.repo_id = "org/m", .revision = kCommit}).ok());

  // A blob gone (or cut short) makes it incomplete again, naming the file.
  fs::resize_file(cache.BlobPath(weights.hash), 2);
  found = FindCached(dir.path(), ref);
  EXPECT_TRUE(absl::IsNotFound(found.status()));
  EXPECT_NE(found.status().message().find("w/model.bin"), std::string::npos);
  // ... unless the patterns leave that file out.
  EXPECT_TRUE(
      FindCached(dir.path(), ModelRef{.repo_id = "org/m", .allow_patterns = {"*.json"}}).ok());
  // Patterns that select nothing are never "ready".
  EXPECT_FALSE(
      FindCached(dir.path(), ModelRef{.repo_id = "org/m", .allow_patterns = {"*.gguf"}}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(FindCached(dir.path(), ModelRef{.repo_id = "bad"}).status()));
}

// Issue 29: refs were written through "<ref>.canhazgpu-tmp" with an
// ofstream, which follows a symlink planted there.
TEST(RepoCacheTest, Issue29SymlinksPlantedAtTheOldTemporaryNamesAreNotFollowed) {
  TempDir dir;
  const RepoCache cache(dir.path(), "org/m", /*durable=*/false);
  const fs::path outside = dir.path() / "outside";
  std::ofstream(outside) << "not yours";
  fs::create_directories(cache.RefPath("main").parent_path());
  fs::create_symlink(outside, cache.RefPath("main").string() + ".canhazgpu-tmp");
  const RepoFile config{.path = "config.json", .hash = std::string(40, '1'), .size = 3};
  const fs::path link = cache.SnapshotDir(kCommit) / "config.json";
  fs::create_directories(link.parent_path());
  fs::create_directory(link.string() + ".canhazgpu-link");  // unlink() cannot remove it

  ASSERT_TRUE(cache.WriteRef("main", kCommit).ok());
  EXPECT_EQ(*cache.ReadRef("main"), kCommit);
  EXPECT_FALSE(fs::is_symlink(cache.RefPath("main")));
  absl::Status linked = cache.Link(kCommit, config);
  ASSERT_TRUE(linked.ok()) << linked;
  EXPECT_EQ(fs::read_symlink(link), RepoCache::LinkTarget("config.json", config.hash));
  std::ifstream in(outside);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not yours");
}

TEST(ParseRevisionInfoTest, LfsAndGitFiles) {
  const std::string sha256(64, 'b');
  absl::StatusOr<RepoListing> listing = ParseRevisionInfo(R"({"sha":")" + kCommit +
                                                              R"(","siblings":[
          {"rfilename":"config.json","blobId":")" + std::string(40, 'c') +
                                                              R"(","size":10},
          {"rfilename":"m.safetensors","blobId":")" + std::string(40, 'd') +
                                                              R"(","size":99,
           "lfs":{"sha256":")" + sha256 + R"(","size":99,"pointerSize":134}}]})",
                                                          "org/m");
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_EQ(listing->commit, kCommit);
  ASSERT_EQ(listing->files.size(), 2u);
  EXPECT_EQ(listing->files[0].kind, HashKind::kGitBlobSha1);
  EXPECT_EQ(listing->files[0].hash, std::string(40, 'c'));
  EXPECT_EQ(listing->files[1].kind, HashKind::kSha256);
  EXPECT_EQ(listing->files[1].hash, sha256);
  EXPECT_EQ(listing->files[1].size, 99u);
}

TEST(ParseRevisionInfoTest, RejectsUnsafePathsAndMissingHashes) {
  EXPECT_FALSE(ParseRevisionInfo(R"({"sha":")" + kCommit +
                                     R"(","siblings":[{"rfilename":"../../x","blobId":")" +
                                     std::string(40, 'c') + R"(","size":1}]})",
                                 "org/m")
                   .ok());
  absl::StatusOr<RepoListing> no_blobs =
      ParseRevisionInfo(R"({"sha":")" + kCommit + R"(","siblings":[{"rfilename":"a"}]})", "org/m");
  EXPECT_NE(no_blobs.status().message().find("blobs=true"), std::string::npos);
  EXPECT_FALSE(ParseRevisionInfo("not json", "org/m").ok());
}

TEST(ContentHashTest, GitBlobSha1MatchesGit) {
  // `printf 'hello\n' | git hash-object --stdin`
  ContentHasher hasher(HashKind::kGitBlobSha1, 6);
  hasher.Update("hello\n");
  EXPECT_EQ(hasher.FinishHex(), "ce013625030ba8dba906f756967f9e9ca394464a");
  ContentHasher sha256(HashKind::kSha256, 0);
  EXPECT_EQ(sha256.FinishHex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace canhazgpu::hfcache
