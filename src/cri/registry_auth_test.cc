#include "cri/registry_auth.h"

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cri {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

std::string Basic(const std::string& user_and_password) {
  return absl::Base64Escape(user_and_password);
}

TEST(NormalizeRegistryHostTest, DockerHubAliasesAreOneHost) {
  EXPECT_EQ(NormalizeRegistryHost("docker.io"), "docker.io");
  EXPECT_EQ(NormalizeRegistryHost("index.docker.io"), "docker.io");
  EXPECT_EQ(NormalizeRegistryHost("registry-1.docker.io"), "docker.io");
  EXPECT_EQ(NormalizeRegistryHost("https://index.docker.io/v1/"), "docker.io");
  EXPECT_EQ(NormalizeRegistryHost("registry.hub.docker.com"), "docker.io");
}

TEST(NormalizeRegistryHostTest, DropsSchemeAndPathKeepsPortAndLowersCase) {
  EXPECT_EQ(NormalizeRegistryHost("https://Quay.IO"), "quay.io");
  EXPECT_EQ(NormalizeRegistryHost("http://registry.local:5000/some/path"), "registry.local:5000");
  EXPECT_EQ(NormalizeRegistryHost(" ghcr.io "), "ghcr.io");
}

TEST(AuthForTest, DockerConfigJsonWithAuthField) {
  std::string config = R"({"auths": {"ghcr.io": {"auth": ")" + Basic("alice:s3cr:et") + R"("}}})";
  auto auth = AuthFor(config, "ghcr.io");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_THAT(*auth, Optional(RegistryAuth{
                         .username = "alice", .password = "s3cr:et", .server_address = "ghcr.io"}));
}

TEST(AuthForTest, UsernameAndPasswordFields) {
  std::string config =
      R"({"auths": {"quay.io": {"username": "bob", "password": "pw", "email": "b@x"}}})";
  auto auth = AuthFor(config, "quay.io");
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE(auth->has_value());
  EXPECT_EQ((*auth)->username, "bob");
  EXPECT_EQ((*auth)->password, "pw");
}

TEST(AuthForTest, AuthFieldWinsOverUsernameAndPassword) {
  std::string config = R"({"auths": {"quay.io": {"username": "old", "password": "old", "auth": ")" +
                       Basic("new:pw") + R"("}}})";
  auto auth = AuthFor(config, "quay.io");
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE(auth->has_value());
  EXPECT_EQ((*auth)->username, "new");
  EXPECT_EQ((*auth)->password, "pw");
}

TEST(AuthForTest, TokensAreCarried) {
  std::string config =
      R"({"auths": {"r.example": {"identitytoken": "id-tok", "registrytoken": "reg-tok"}}})";
  auto auth = AuthFor(config, "r.example");
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE(auth->has_value());
  EXPECT_EQ((*auth)->identity_token, "id-tok");
  EXPECT_EQ((*auth)->registry_token, "reg-tok");
}

TEST(AuthForTest, DockerHubKeysMatchEveryAlias) {
  std::string config =
      R"({"auths": {"https://index.docker.io/v1/": {"auth": ")" + Basic("hub:pw") + R"("}}})";
  for (const char* host : {"docker.io", "index.docker.io", "registry-1.docker.io"}) {
    auto auth = AuthFor(config, host);
    ASSERT_TRUE(auth.ok()) << auth.status();
    ASSERT_TRUE(auth->has_value()) << host;
    EXPECT_EQ((*auth)->username, "hub");
    EXPECT_EQ((*auth)->server_address, "docker.io");
  }
}

TEST(AuthForTest, LegacyDockerCfgForm) {
  std::string config =
      R"({"https://registry.local:5000": {"auth": ")" + Basic("u:p") + R"(", "email": "u@x"}})";
  auto auth = AuthFor(config, "registry.local:5000");
  ASSERT_TRUE(auth.ok()) << auth.status();
  ASSERT_TRUE(auth->has_value());
  EXPECT_EQ((*auth)->username, "u");
}

TEST(AuthForTest, OtherHostOrPortHasNone) {
  std::string config = R"({"auths": {"registry.local:5000": {"auth": ")" + Basic("u:p") + R"("}}})";
  for (const char* host : {"registry.local", "registry.local:5001", "docker.io"}) {
    auto auth = AuthFor(config, host);
    ASSERT_TRUE(auth.ok()) << auth.status();
    EXPECT_FALSE(auth->has_value()) << host;
  }
}

TEST(AuthForTest, WildcardMatchesOneLabelAndExactWins) {
  std::string config = R"({"auths": {"*.example.com": {"auth": ")" + Basic("wild:1") +
                       R"("}, "exact.example.com": {"auth": ")" + Basic("exact:2") + R"("}}})";
  auto wild = AuthFor(config, "a.example.com");
  ASSERT_TRUE(wild.ok()) << wild.status();
  ASSERT_TRUE(wild->has_value());
  EXPECT_EQ((*wild)->username, "wild");
  auto exact = AuthFor(config, "exact.example.com");
  ASSERT_TRUE(exact.ok()) << exact.status();
  ASSERT_TRUE(exact->has_value());
  EXPECT_EQ((*exact)->username, "exact");
  auto deeper = AuthFor(config, "a.b.example.com");
  ASSERT_TRUE(deeper.ok()) << deeper.status();
  EXPECT_FALSE(deeper->has_value());
}

TEST(AuthForTest, MalformedConfigsAreClearErrors) {
  struct Case {
    std::string config;
    std::string message;
  };
  const Case cases[] = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"auths": []})", "\"auths\" is not a JSON object"},
      {R"({"auths": {"ghcr.io": "x"}})",
       "\"ghcr.io\" are malformed: the entry is not a JSON object"},
      {R"({"auths": {"ghcr.io": {"auth": "!!!"}}})", "\"auth\" is not base64"},
      {R"({"auths": {"ghcr.io": {"auth": ")" + Basic("nocolon") + R"("}}})",
       "does not decode to username:password"},
      {R"({"auths": {"ghcr.io": {"username": 7}}})", "\"username\" is not a string"},
  };
  for (const Case& c : cases) {
    auto auth = AuthFor(c.config, "ghcr.io");
    ASSERT_FALSE(auth.ok()) << c.config;
    EXPECT_EQ(auth.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(auth.status().message()), HasSubstr(c.message)) << c.config;
    EXPECT_EQ(std::string(auth.status().message()).find('\n'), std::string::npos);
  }
}

TEST(AuthForTest, MalformedEntryForAnotherHostDoesNotMatter) {
  std::string config =
      R"({"auths": {"other.io": 5, "ghcr.io": {"auth": ")" + Basic("a:b") + R"("}}})";
  auto auth = AuthFor(config, "ghcr.io");
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->has_value());
}

TEST(AuthFromPullSecretTest, PicksTheKeyByType) {
  std::string json_config = R"({"auths": {"ghcr.io": {"auth": ")" + Basic("a:b") + R"("}}})";
  std::string legacy_config = R"({"ghcr.io": {"auth": ")" + Basic("c:d") + R"("}})";
  auto modern = AuthFromPullSecret("regcred", "kubernetes.io/dockerconfigjson",
                                   {{".dockerconfigjson", json_config}}, "ghcr.io");
  ASSERT_TRUE(modern.ok()) << modern.status();
  ASSERT_TRUE(modern->has_value());
  EXPECT_EQ((*modern)->username, "a");
  auto legacy = AuthFromPullSecret("old", "kubernetes.io/dockercfg",
                                   {{".dockercfg", legacy_config}}, "ghcr.io");
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  ASSERT_TRUE(legacy->has_value());
  EXPECT_EQ((*legacy)->username, "c");
}

TEST(AuthFromPullSecretTest, WrongTypeMissingKeyAndBadDataNameTheSecret) {
  auto opaque = AuthFromPullSecret("regcred", "Opaque", {}, "ghcr.io");
  EXPECT_THAT(std::string(opaque.status().message()),
              HasSubstr("pull secret regcred has type \"Opaque\""));
  auto missing = AuthFromPullSecret("regcred", "kubernetes.io/dockerconfigjson",
                                    {{".dockercfg", "{}"}}, "ghcr.io");
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("pull secret regcred has no .dockerconfigjson key"));
  auto bad = AuthFromPullSecret("regcred", "kubernetes.io/dockerconfigjson",
                                {{".dockerconfigjson", "nope"}}, "ghcr.io");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("pull secret regcred: "));
}

}  // namespace
}  // namespace canhazgpu::cri
