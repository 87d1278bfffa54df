#include "hfcache/model_ref.h"

#include <gtest/gtest.h>

namespace canhazgpu::hfcache {
namespace {

TEST(RepoIdTest, AcceptsHubIds) {
  EXPECT_TRUE(ValidateRepoId("Qwen/Qwen3-0.6B").ok());
  EXPECT_TRUE(ValidateRepoId("meta-llama/Llama-3.1-8B_Instruct").ok());
}

TEST(RepoIdTest, RejectsMalformedIdsWithTheRule) {
  for (const char* bad : {"", "gpt2", "a/b/c", "/name", "org/", "org/na me", "org/..", "org/-x",
                          "org/x.", "or--g/x", "org/a..b", "org/x?y"}) {
    absl::Status status = ValidateRepoId(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
    EXPECT_NE(status.message().find("expected org/name"), std::string::npos) << status;
  }
  EXPECT_FALSE(ValidateRepoId("org/" + std::string(100, 'x')).ok());
}

TEST(RevisionTest, AcceptsBranchesTagsCommitsAndPrRefs) {
  for (const std::string& good :
       std::vector<std::string>{"main", "v1.0", "refs/pr/1", std::string(40, 'a')}) {
    EXPECT_TRUE(ValidateRevision(good).ok()) << good;
  }
  for (const char* bad : {"", "/main", "../x", "a/../b", "a//b", "a\\b", "a/./b"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateRevision(bad))) << bad;
  }
}

TEST(RepoFilePathTest, RejectsPathsThatEscapeTheSnapshot) {
  EXPECT_TRUE(ValidateRepoFilePath("a/b/c.json").ok());
  EXPECT_TRUE(ValidateRepoFilePath(".gitattributes").ok());
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a\\b", "./a"}) {
    EXPECT_FALSE(ValidateRepoFilePath(bad).ok()) << bad;
  }
}

TEST(CommitHashTest, OnlyFortyLowercaseHex) {
  EXPECT_TRUE(IsCommitHash(std::string(40, 'f')));
  EXPECT_FALSE(IsCommitHash(std::string(40, 'F')));
  EXPECT_FALSE(IsCommitHash(std::string(39, 'a')));
  EXPECT_FALSE(IsCommitHash("main"));
}

TEST(RepoFolderNameTest, HubNaming) {
  EXPECT_EQ(RepoFolderName("Qwen/Qwen3-0.6B"), "models--Qwen--Qwen3-0.6B");
}

TEST(AllowPatternsTest, FnmatchLikeHuggingfaceHub) {
  EXPECT_TRUE(MatchesAllowPatterns("anything/at/all", {}));
  EXPECT_TRUE(MatchesAllowPatterns("config.json", {"*.json"}));
  // '*' crosses '/' as in Python's fnmatch.
  EXPECT_TRUE(MatchesAllowPatterns("nested/dir/x.json", {"*.json"}));
  EXPECT_FALSE(MatchesAllowPatterns("model.safetensors", {"*.json", "tokenizer*"}));
  EXPECT_TRUE(MatchesAllowPatterns("tokenizer.model", {"*.json", "tokenizer*"}));
  // "dir/" means everything below dir.
  EXPECT_TRUE(MatchesAllowPatterns("nested/dir/x.bin", {"nested/"}));
  EXPECT_FALSE(MatchesAllowPatterns("nestedx.bin", {"nested/"}));
  EXPECT_TRUE(MatchesAllowPatterns("model-00001.safetensors", {"model-0000[0-9].safetensors"}));
  // No backslash escapes.
  EXPECT_TRUE(MatchesAllowPatterns("a\\b", {"a\\b"}));
  // Case-sensitive, as on Linux.
  EXPECT_FALSE(MatchesAllowPatterns("CONFIG.JSON", {"*.json"}));
}

}  // namespace
}  // namespace canhazgpu::hfcache
