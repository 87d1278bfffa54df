#include "cacheplan/validate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cacheplan {
namespace {

using ::testing::HasSubstr;

CacheItem Image(std::string name, std::string ref) {
  return {.name = std::move(name), .type = kImage, .image = ImageSource{.ref = std::move(ref)}};
}
CacheItem Repo(std::string name, GitRepoSource source) {
  return {.name = std::move(name), .type = kGitRepo, .git_repo = std::move(source)};
}
CacheItem Model(std::string name, HfModelSource source) {
  return {.name = std::move(name), .type = kHfModel, .hf_model = std::move(source)};
}

void ExpectError(const CacheItem& item, const std::string& want) {
  absl::Status s = ValidateItem(item);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << want;
  EXPECT_THAT(s.message(), HasSubstr(want));
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos) << "one line";
}

TEST(ValidateTest, AcceptsEveryKindOfGoodItem) {
  const std::vector<CacheItem> good = {
      Image("a", "nginx"),
      Image("b", "localhost:5000/x/y:dev"),
      Repo("c", {.url = "https://github.com/vllm-project/vllm.git", .branch = "main"}),
      Repo("d", {.url = "git@github.com:me/vllm.git", .commit = "0123abc"}),
      Repo("e", {.url = "ssh://git@host:2222/r.git"}),
      Repo("f", {.url = "https://h/r.git", .branch = "feature/x"}),
      Repo("g", {.url = "http://127.0.0.1:8080/r.git"}),
      Model("h", {.repo_id = "Qwen/Qwen2.5-0.5B-Instruct",
                  .revision = "v1.0",
                  .allow_patterns = {"*.json"}}),
      Model("i", {.repo_id = "gpt2"}),
  };
  EXPECT_TRUE(ValidateItems(good).ok()) << ValidateItems(good);
  CacheItem scoped = Image("j", "nginx");
  scoped.node_selector = {{"nvidia.com/gpu.product", "H100-80GB"}, {"pool", ""}};
  scoped.pull_secret = SecretRef{.namespace_name = "ml", .name = "regcred"};
  scoped.refresh_requested_at = "2026-11-24T10:00:00.123+01:00";
  EXPECT_TRUE(ValidateItem(scoped).ok()) << ValidateItem(scoped);
}

// The node agent is root: a local path in a plan would copy what only root
// may read into the cache every user and pod reads.
TEST(ValidateTest, RefusesLocalRepositoriesUnlessTheNodeAllowsThem) {
  const CacheItem local = Repo("f", {.url = "file:///srv/secret-repo", .branch = "main"});
  ExpectError(local, "git URL \"file:///srv/secret-repo\" names a path on the node");
  EXPECT_TRUE(ValidateItem(local, {.allow_local_git = true}).ok());
  EXPECT_FALSE(ValidateItems({local}).ok());
  EXPECT_TRUE(ValidateItems({local}, {.allow_local_git = true}).ok());
  EXPECT_FALSE(Validate(CachePlan{.name = "p", .items = {local}}).ok());
  // Still only absolute paths, even where local repositories are allowed.
  EXPECT_FALSE(ValidateItem(Repo("x", {.url = "file://relative"}), {.allow_local_git = true}).ok());
}

TEST(ValidateTest, NamesWhatIsWrongInOneLine) {
  ExpectError(Image("Bad_Name", "nginx"), "cache item 'Bad_Name': the name must be");
  ExpectError(Image("", "nginx"), "cache item '<unnamed>'");
  ExpectError({.name = "x", .type = "pythonWheels"}, "unknown type \"pythonWheels\"; use image");
  ExpectError({.name = "x", .type = kImage}, "an image needs image.ref");
  ExpectError(Image("x", "Nginx:latest"),
              "cache item 'x': invalid image reference \"Nginx:latest\"");
  ExpectError({.name = "x", .type = kGitRepo}, "a gitRepo needs gitRepo.url");
  ExpectError(Repo("x", {.url = "ftp://host/r"}), "git URL \"ftp://host/r\" must be https://");
  ExpectError(Repo("x", {.url = "github.com/me/r"}), "must be https://");
  ExpectError(Repo("x", {.url = "https://"}), "must be https://");
  ExpectError(Repo("x", {.url = "file://relative"}), "must be https://");
  ExpectError(Repo("x", {.url = "https://h/r", .branch = "main", .commit = "0123abc"}),
              "give a branch or a commit, not both");
  ExpectError(Repo("x", {.url = "https://h/r", .branch = "a..b"}),
              "\"a..b\" is not a valid branch");
  ExpectError(Repo("x", {.url = "https://h/r", .commit = "xyz"}), "commit \"xyz\" must be 7 to 40");
  ExpectError({.name = "x", .type = kHfModel}, "an hfModel needs hfModel.repoId");
  ExpectError(Model("x", {.repo_id = "org/na me"}),
              "model id \"org/na me\" must be NAME or ORG/NAME");
  ExpectError(Model("x", {.repo_id = "a/b/c"}), "must be NAME or ORG/NAME");
  ExpectError(Model("x", {.repo_id = "org/--x"}), "must be NAME or ORG/NAME");
  ExpectError(Model("x", {.repo_id = "gpt2", .allow_patterns = {""}}), "an allow pattern is empty");
  CacheItem both = Image("x", "nginx");
  both.git_repo = GitRepoSource{.url = "https://h/r"};
  ExpectError(both, "a image item has only its image source");
  CacheItem selector = Image("x", "nginx");
  selector.node_selector = {{"bad key!", "v"}};
  ExpectError(selector, "node selector key \"bad key!\"");
  selector.node_selector = {{"k", "-v"}};
  ExpectError(selector, "node selector value \"-v\"");
  CacheItem secret = Image("x", "nginx");
  secret.pull_secret = SecretRef{.namespace_name = "", .name = "s"};
  ExpectError(secret, "pull secret \"/s\" must be NAMESPACE/NAME");
  CacheItem refresh = Image("x", "nginx");
  refresh.refresh_requested_at = "yesterday";
  ExpectError(refresh, "refreshRequestedAt \"yesterday\" is not an RFC 3339 time");
}

TEST(ValidateTest, TheAuthorsTextIsShownEscapedOnOneLine) {
  ExpectError(Model("x", {.repo_id = "Qw\n/Qwen"}), "model id \"Qw\\n/Qwen\" must be");
  ExpectError(Repo("x", {.url = "https://h/r", .branch = "a\rb"}), "\"a\\rb\" is not a valid");
  ExpectError(Image("x\x1b[2J", "nginx"), "cache item 'x\\e[2J'");
  CacheItem refresh = Image("x", "nginx");
  refresh.refresh_requested_at = "\n";
  ExpectError(refresh, "refreshRequestedAt \"\\n\"");
}

TEST(ValidateTest, NamesMustBeUniqueInThePlan) {
  CachePlan plan{.name = "default", .items = {Image("a", "nginx"), Image("a", "redis")}};
  absl::Status s = Validate(plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "CachePlan default: cache item 'a' is in the plan twice; item names must be unique");
}

TEST(ValidateTest, Rfc3339) {
  EXPECT_TRUE(IsRfc3339("2026-11-24T10:00:00Z"));
  EXPECT_TRUE(IsRfc3339("2026-11-24T10:00:00.5-07:00"));
  EXPECT_FALSE(IsRfc3339("2026-11-24 10:00:00Z"));
  EXPECT_FALSE(IsRfc3339("2026-11-24T10:00:00"));
  EXPECT_FALSE(IsRfc3339("2026-11-24T10:00:00.Z"));
  EXPECT_FALSE(IsRfc3339("2026-11-24T10:00:00+0100"));
}

TEST(ValidateTest, DefaultNamesComeFromTheSourceAndAreValid) {
  EXPECT_EQ(DefaultItemName(Image("", "vllm/vllm-openai:v0.6.3")), "vllm-openai-v0-6-3");
  EXPECT_EQ(DefaultItemName(Image("", "nginx")), "nginx");
  EXPECT_EQ(DefaultItemName(Image("", "ghcr.io/a/b@sha256:" + std::string(64, 'f'))),
            "b-ffffffffffff");
  EXPECT_EQ(DefaultItemName(Repo("", {.url = "https://github.com/vllm-project/vllm.git"})),
            "vllm-project-vllm");
  // Branches of one fork get different names (the prototype's were per owner).
  EXPECT_EQ(DefaultItemName(Repo("", {.url = "git@github.com:me/vllm.git", .branch = "fix/x"})),
            "me-vllm-fix-x");
  EXPECT_EQ(DefaultItemName(Repo("", {.url = "file:///srv/r", .commit = "0123456789abcdef"})),
            "srv-r-0123456789ab");
  EXPECT_EQ(DefaultItemName(Model("", {.repo_id = "Qwen/Qwen2.5-0.5B"})), "qwen-qwen2-5-0-5b");
  EXPECT_EQ(DefaultItemName(Model("", {.repo_id = "gpt2", .revision = "v2"})), "gpt2-v2");
  const std::string long_name =
      DefaultItemName(Model("", {.repo_id = std::string(90, 'a') + "/" + std::string(90, 'b')}));
  EXPECT_TRUE(IsItemName(long_name)) << long_name;
  EXPECT_EQ(DefaultItemName(Image("", "___")), "item");
}

}  // namespace
}  // namespace canhazgpu::cacheplan
