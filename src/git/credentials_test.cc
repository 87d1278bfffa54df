#include "git/credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "core/strings.h"
#include "git/git.h"

// SSH is covered here as credential selection only: there is no sshd in the
// test environment, so no fetch over SSH runs.
namespace canhazgpu::git {
namespace {

using ::testing::HasSubstr;

TEST(CredentialsFromSecretData, ReadsEachKindOfSecret) {
  absl::StatusOr<GitCredentials> token = CredentialsFromSecretData("s", {{"token", "t0k"}});
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->password, "t0k");
  EXPECT_TRUE(token->username.empty());
  EXPECT_TRUE(token->has_https());
  EXPECT_FALSE(token->has_ssh());

  absl::StatusOr<GitCredentials> basic =
      CredentialsFromSecretData("s", {{"username", "me"}, {"password", "pw"}});
  ASSERT_TRUE(basic.ok()) << basic.status();
  EXPECT_EQ(basic->username, "me");
  EXPECT_EQ(basic->password, "pw");

  absl::StatusOr<GitCredentials> ssh = CredentialsFromSecretData(
      "s", {{"ssh-privatekey", "KEY"}, {"passphrase", "pp"}, {"known_hosts", "h ssh-ed25519 AA"}});
  ASSERT_TRUE(ssh.ok()) << ssh.status();
  EXPECT_TRUE(ssh->has_ssh());
  EXPECT_FALSE(ssh->has_https());
  EXPECT_EQ(ssh->ssh_passphrase, "pp");
  EXPECT_EQ(ssh->known_hosts, "h ssh-ed25519 AA");
}

TEST(CredentialsFromSecretData, RejectsIncompleteSecretsNamingThem) {
  struct Case {
    std::map<std::string, std::string> data;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"password", "pw"}}, "has 'password' but no 'username'"},
           {{{"token", "t"}, {"password", "pw"}, {"username", "u"}}, "both 'token' and 'password'"},
           {{{"passphrase", "pp"}}, "'passphrase' but no 'ssh-privatekey'"},
           {{{"unrelated", "x"}}, "has none of 'token'"},
       }) {
    absl::StatusOr<GitCredentials> credentials = CredentialsFromSecretData("repo-secret", c.data);
    EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(credentials.status().message(), HasSubstr("Secret repo-secret"));
    EXPECT_THAT(credentials.status().message(), HasSubstr(c.message));
  }
}

TEST(ChooseCredential, HttpsTokenUsesTheConfiguredThenTheUrlThenTheDefaultUserName) {
  GitCredentials token{.password = "t"};
  CredentialChoice choice = ChooseCredential(token, nullptr, GIT_CREDENTIAL_USERPASS_PLAINTEXT);
  EXPECT_EQ(choice.kind, CredentialChoice::kUserPass);
  EXPECT_EQ(choice.username, kTokenUserName);
  EXPECT_EQ(ChooseCredential(token, "alice", GIT_CREDENTIAL_USERPASS_PLAINTEXT).username, "alice");
  GitCredentials basic{.username = "bob", .password = "pw"};
  EXPECT_EQ(ChooseCredential(basic, "alice", GIT_CREDENTIAL_USERPASS_PLAINTEXT).username, "bob");
}

TEST(ChooseCredential, SshAnswersTheUserNameStepThenTheKey) {
  GitCredentials ssh{.ssh_private_key = "KEY"};
  CredentialChoice name = ChooseCredential(ssh, nullptr, GIT_CREDENTIAL_USERNAME);
  EXPECT_EQ(name.kind, CredentialChoice::kUsername);
  EXPECT_EQ(name.username, "git");
  CredentialChoice key = ChooseCredential(
      ssh, "deploy",
      GIT_CREDENTIAL_SSH_KEY | GIT_CREDENTIAL_SSH_MEMORY | GIT_CREDENTIAL_SSH_CUSTOM);
  EXPECT_EQ(key.kind, CredentialChoice::kSshKey);
  EXPECT_EQ(key.username, "deploy");
}

TEST(ChooseCredential, NothingWhenTheSecretHasNoKindTheServerAccepts) {
  GitCredentials ssh{.ssh_private_key = "KEY"};
  EXPECT_EQ(ChooseCredential(ssh, nullptr, GIT_CREDENTIAL_USERPASS_PLAINTEXT).kind,
            CredentialChoice::kNone);
  GitCredentials token{.password = "t"};
  EXPECT_EQ(
      ChooseCredential(token, nullptr, GIT_CREDENTIAL_SSH_KEY | GIT_CREDENTIAL_SSH_MEMORY).kind,
      CredentialChoice::kNone);
  EXPECT_EQ(ChooseCredential(GitCredentials{}, nullptr, ~0u).kind, CredentialChoice::kNone);
}

TEST(KnownHosts, MatchesHostPortAndKeyExactly) {
  const std::string key = std::string("\x00\x00\x00\x0bssh-ed25519", 15) + "raw-key-bytes";
  const std::string encoded = absl::Base64Escape(key);
  const std::string known =
      StrCat("# comment\n", "other.example ssh-ed25519 ", absl::Base64Escape("different"), "\n",
             "git.example,10.0.0.1 ssh-ed25519 ", encoded, "\n", "[git.example]:2222 ssh-ed25519 ",
             encoded, " comment\n");
  EXPECT_TRUE(KnownHostsListKey(known, "git.example", 22, key));
  EXPECT_TRUE(KnownHostsListKey(known, "10.0.0.1", 22, key));
  EXPECT_TRUE(KnownHostsListKey(known, "git.example", 2222, key));
  EXPECT_FALSE(KnownHostsListKey(known, "git.example", 2200, key));
  EXPECT_FALSE(KnownHostsListKey(known, "other.example", 22, key));
  EXPECT_FALSE(KnownHostsListKey(known, "git.example", 22, "another key"));
}

TEST(CredentialSession, TriesTheCredentialOnceThenReportsTheRejection) {
  EnsureInitialized();
  GitCredentials token{.password = "t"};
  CredentialSession session(&token, "https://git.example/r.git");
  git_credential* credential = nullptr;
  ASSERT_EQ(CredentialSession::AcquireCallback(&credential, "https://git.example/r.git", nullptr,
                                               GIT_CREDENTIAL_USERPASS_PLAINTEXT, &session),
            0);
  ASSERT_NE(credential, nullptr);
  EXPECT_EQ(credential->credtype, GIT_CREDENTIAL_USERPASS_PLAINTEXT);
  git_credential_free(credential);
  EXPECT_FALSE(session.Failure().has_value());

  // The server said no: asking again ends the fetch.
  credential = nullptr;
  EXPECT_EQ(CredentialSession::AcquireCallback(&credential, "https://git.example/r.git", nullptr,
                                               GIT_CREDENTIAL_USERPASS_PLAINTEXT, &session),
            GIT_EAUTH);
  EXPECT_EQ(credential, nullptr);
  ASSERT_TRUE(session.Failure().has_value());
  EXPECT_EQ(session.Failure()->code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(session.Failure()->message(),
              HasSubstr("authentication failed for https://git.example/r.git"));
}

TEST(CredentialSession, WithoutCredentialsSaysTheRepositoryNeedsThem) {
  CredentialSession session(nullptr, "https://git.example/private.git");
  git_credential* credential = nullptr;
  EXPECT_EQ(CredentialSession::AcquireCallback(&credential, "", nullptr,
                                               GIT_CREDENTIAL_USERPASS_PLAINTEXT, &session),
            GIT_EAUTH);
  ASSERT_TRUE(session.Failure().has_value());
  EXPECT_THAT(session.Failure()->message(),
              HasSubstr("https://git.example/private.git requires authentication"));
}

TEST(CredentialSession, BuildsAnInMemorySshKeyCredential) {
  EnsureInitialized();
  GitCredentials ssh{.ssh_private_key = "-----BEGIN OPENSSH PRIVATE KEY-----\n...\n",
                     .ssh_passphrase = "pp"};
  CredentialSession session(&ssh, "ssh://git@git.example/r.git");
  git_credential* credential = nullptr;
  ASSERT_EQ(CredentialSession::AcquireCallback(&credential, "ssh://git@git.example/r.git", "git",
                                               GIT_CREDENTIAL_SSH_KEY | GIT_CREDENTIAL_SSH_MEMORY,
                                               &session),
            0)
      << git_error_last()->message;
  EXPECT_EQ(credential->credtype, GIT_CREDENTIAL_SSH_MEMORY);
  git_credential_free(credential);
}

// libgit2 asks again, with the new URL, after a server redirected the
// fetch: another host or scheme gets nothing, the same host does.
TEST(CredentialSession, GivesNothingToAnotherHostOrScheme) {
  GitCredentials token{.password = "t0ken"};
  for (const char* elsewhere : {"https://evil.example/r.git", "http://git.example/r.git", ""}) {
    CredentialSession session(&token, "https://git.example/r.git");
    git_credential* credential = nullptr;
    EXPECT_EQ(CredentialSession::AcquireCallback(&credential, elsewhere, nullptr,
                                                 GIT_CREDENTIAL_USERPASS_PLAINTEXT, &session),
              GIT_EAUTH)
        << elsewhere;
    ASSERT_TRUE(session.Failure().has_value());
    EXPECT_THAT(session.Failure()->message(), HasSubstr("sent the fetch on to"));
  }
  CredentialSession session(&token, "https://git.example/r.git");
  git_credential* credential = nullptr;
  ASSERT_EQ(
      CredentialSession::AcquireCallback(&credential, "https://GIT.example:443/moved.git", nullptr,
                                         GIT_CREDENTIAL_USERPASS_PLAINTEXT, &session),
      0);
  git_credential_free(credential);
}

}  // namespace
}  // namespace canhazgpu::git
