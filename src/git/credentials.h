// Credentials for fetching a git repository, read from a Kubernetes Secret's
// data (the decoded bytes of each key), and the libgit2 callbacks that hand
// them to a fetch.
//
// Accepted keys:
//   HTTPS  `token` (optionally with `username`), or `username` + `password`
//          as in a kubernetes.io/basic-auth Secret;
//   SSH    `ssh-privatekey` as in a kubernetes.io/ssh-auth Secret, with an
//          optional `passphrase` and an optional `known_hosts` (OpenSSH
//          format) that the server's host key must match.
// Which one is used depends on what the server asks for (libgit2's
// allowed_types), so one Secret may carry both.
//
// Every fetch tries its credential once: a rejected token ends the fetch with
// "authentication failed for URL" instead of asking the server again and
// again. Certificate checking stays libgit2's (TLS verified against the
// system's CAs; SSH host keys against known_hosts); nothing here turns it off.
//
// Thread safety: GitCredentials is a value; CredentialSession belongs to one
// fetch on one thread.
#pragma once

#include <git2.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace canhazgpu::git {

struct GitCredentials {
  // HTTPS basic authentication. With only a token, the user name is the
  // one in the URL, else kTokenUserName (GitHub, Gitea and GitLab accept
  // any non-empty name with a token as the password).
  std::string username;
  std::string password;  // the token, or the basic-auth password

  // SSH.
  std::string ssh_private_key;  // PEM / OpenSSH text
  std::string ssh_passphrase;
  std::string known_hosts;  // OpenSSH known_hosts lines; empty: libgit2's default check

  bool has_https() const { return !password.empty(); }
  bool has_ssh() const { return !ssh_private_key.empty(); }
  bool empty() const { return !has_https() && !has_ssh(); }
};

inline constexpr char kTokenUserName[] = "x-access-token";

// Reads the Secret named `secret_name` (for messages only) from its decoded
// data. InvalidArgument, naming the Secret and the key, when the data holds
// none of the keys above or an incomplete pair (a password without a
// username, a passphrase without a key).
absl::StatusOr<GitCredentials> CredentialsFromSecretData(
    std::string_view secret_name, const std::map<std::string, std::string>& data);

// What to answer when libgit2 asks for a credential: the decision, without
// libgit2 objects, so it can be tested without a server.
struct CredentialChoice {
  enum Kind { kNone, kUserPass, kSshKey, kUsername };
  Kind kind = kNone;
  std::string username;
};
CredentialChoice ChooseCredential(const GitCredentials& credentials, const char* username_from_url,
                                  unsigned int allowed_types);

// Whether `host_key` (raw bytes, as in known_hosts after base64 decoding) is
// listed for `host` (and `port`, 22 meaning the bare host name) in the
// OpenSSH `known_hosts` text. Hashed entries (|1|...) and patterns with
// wildcards are not understood and never match.
bool KnownHostsListKey(std::string_view known_hosts, std::string_view host, int port,
                       std::string_view host_key);

// The state of one fetch's authentication: the libgit2 callbacks point their
// payload at it, and afterwards it says why a fetch failed.
class CredentialSession {
 public:
  // Initialises libgit2 (EnsureInitialized): the callbacks set its
  // thread-local error message.
  CredentialSession(const GitCredentials* credentials, std::string url);

  // Installs the credential and certificate callbacks with `this` as payload.
  // Other callbacks that need their own payload call the static functions.
  void Install(git_remote_callbacks& callbacks);

  static int AcquireCallback(git_credential** out, const char* url, const char* username_from_url,
                             unsigned int allowed_types, void* payload);
  static int CertificateCallback(git_cert* cert, int valid, const char* host, void* payload);

  // When the fetch failed for want of a credential, or because the one given
  // was rejected: the status to report (PermissionDenied); else nullopt.
  std::optional<absl::Status> Failure() const;

 private:
  int Acquire(git_credential** out, const char* username_from_url, unsigned int allowed_types);
  int CheckCertificate(git_cert* cert, int valid, const char* host);
  // Whether `asked_by` (the URL libgit2 wants a credential for) has the
  // scheme and host of the URL the session was made for.
  bool SameServer(std::string_view asked_by) const;
  int RefuseRedirect(std::string_view asked_by);

  const GitCredentials* credentials_;  // may be null: anonymous
  std::string url_;
  int attempts_ = 0;
  std::optional<absl::Status> failure_;
};

}  // namespace canhazgpu::git
