#include "cacheagent/credential_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cacheagent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

nlohmann::json SecretFor(const std::string& hosts) {
  return {
      {"metadata", {{"name", "token"}, {"annotations", {{kCredentialHostsAnnotation, hosts}}}}}};
}

TEST(CredentialPolicyTest, SecretsAreReadOnlyInTheNamespacesTheAdministratorListed) {
  CredentialPolicy policy;
  EXPECT_TRUE(
      CheckSecretNamespace({.namespace_name = "canhazgpu-system", .name = "t"}, policy).ok());
  absl::Status other = CheckSecretNamespace({.namespace_name = "team-a", .name = "t"}, policy);
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(other.message(), HasSubstr("only in canhazgpu-system"));
  EXPECT_THAT(other.message(), HasSubstr("--cache-secret-namespaces"));
  policy.secret_namespaces = {"infra", "ml"};
  EXPECT_TRUE(CheckSecretNamespace({.namespace_name = "ml", .name = "t"}, policy).ok());
  EXPECT_FALSE(
      CheckSecretNamespace({.namespace_name = "canhazgpu-system", .name = "t"}, policy).ok());
}

TEST(CredentialPolicyTest, ASecretMustNameTheHostsItIsFor) {
  EXPECT_THAT(*CredentialHosts("ns/t", SecretFor(" GitHub.com, ghcr.io:443 ,,github.com")),
              ElementsAre("github.com", "ghcr.io"));
  for (const nlohmann::json& secret :
       {nlohmann::json::object(), SecretFor(""), SecretFor(" , "),
        nlohmann::json{{"metadata", {{"annotations", {{kCredentialHostsAnnotation, 7}}}}}}}) {
    absl::StatusOr<std::vector<std::string>> hosts = CredentialHosts("ns/t", secret);
    EXPECT_EQ(hosts.status().code(), absl::StatusCode::kPermissionDenied) << secret;
    EXPECT_THAT(hosts.status().message(),
                HasSubstr("annotate it with " + std::string(kCredentialHostsAnnotation)));
  }
}

TEST(CredentialPolicyTest, ACredentialGoesOnlyToItsHostsOverHttpsOrSsh) {
  const std::vector<std::string> hosts = {"github.com", "127.0.0.1"};
  CredentialPolicy policy;
  EXPECT_TRUE(CheckCredentialUrl("ns/t", hosts, "https://github.com/o/r.git", policy).ok());
  EXPECT_TRUE(CheckCredentialUrl("ns/t", hosts, "git@github.com:o/r.git", policy).ok());
  EXPECT_TRUE(CheckCredentialUrl("ns/t", hosts, "ssh://git@github.com:22/o/r", policy).ok());

  absl::Status elsewhere = CheckCredentialUrl("ns/t", hosts, "https://evil.example/r", policy);
  EXPECT_EQ(elsewhere.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(elsewhere.message(), HasSubstr("is for github.com, 127.0.0.1"));
  EXPECT_THAT(elsewhere.message(), HasSubstr("not for evil.example"));
  EXPECT_FALSE(CheckCredentialUrl("ns/t", hosts, "https://github.com@evil.example/r", policy).ok());

  absl::Status plain = CheckCredentialUrl("ns/t", hosts, "http://github.com/o/r", policy);
  EXPECT_THAT(plain.message(), HasSubstr("only over https or ssh"));
  EXPECT_FALSE(CheckCredentialUrl("ns/t", hosts, "git://github.com/o/r", policy).ok());
  EXPECT_FALSE(CheckCredentialUrl("ns/t", hosts, "http://127.0.0.1:8080/r", policy).ok());
  EXPECT_FALSE(CheckCredentialUrl("ns/t", hosts, "file:///srv/r", policy).ok());

  // Test servers: plain http to a listed loopback host, when allowed.
  policy.allow_plain_http_to_loopback = true;
  EXPECT_TRUE(CheckCredentialUrl("ns/t", hosts, "http://127.0.0.1:8080/r", policy).ok());
  EXPECT_FALSE(CheckCredentialUrl("ns/t", hosts, "http://github.com/o/r", policy).ok());
  EXPECT_FALSE(CheckCredentialUrl("ns/t", {"github.com"}, "http://127.0.0.1:8080/r", policy).ok());
}

TEST(CredentialPolicyTest, ARegistryCredentialGoesOnlyToItsRegistries) {
  EXPECT_TRUE(CheckCredentialRegistry("ns/p", {"registry.local"}, "registry.local:5000").ok());
  absl::Status other = CheckCredentialRegistry("ns/p", {"registry.local"}, "ghcr.io");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(other.message(), HasSubstr("not for ghcr.io"));
}

}  // namespace
}  // namespace canhazgpu::cacheagent
