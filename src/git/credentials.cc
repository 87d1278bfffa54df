#include "git/credentials.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/strings.h"
#include "core/url_host.h"
#include "git/git.h"

namespace canhazgpu::git {
namespace {

std::string Lookup(const std::map<std::string, std::string>& data, const char* key) {
  auto it = data.find(key);
  return it == data.end() ? std::string() : it->second;
}

// The port of an ssh:// URL; 22 for scp-like addresses (host:path).
int SshPort(std::string_view url_in) {
  absl::string_view url(url_in.data(), url_in.size());
  if (!absl::ConsumePrefix(&url, "ssh://")) return 22;
  url = url.substr(0, url.find('/'));
  if (size_t at = url.rfind('@'); at != absl::string_view::npos) url.remove_prefix(at + 1);
  if (!url.empty() && url.front() == '[') {  // [v6 address]:port
    size_t close = url.find(']');
    if (close == absl::string_view::npos) return 22;
    url.remove_prefix(close + 1);
  }
  size_t colon = url.rfind(':');
  int port = 22;
  if (colon != absl::string_view::npos &&
      absl::SimpleAtoi(std::string(url.substr(colon + 1)), &port)) {
    return port;
  }
  return 22;
}

}  // namespace

absl::StatusOr<GitCredentials> CredentialsFromSecretData(
    std::string_view secret_name, const std::map<std::string, std::string>& data) {
  GitCredentials credentials;
  std::string token = Lookup(data, "token");
  std::string password = Lookup(data, "password");
  credentials.username = Lookup(data, "username");
  credentials.ssh_private_key = Lookup(data, "ssh-privatekey");
  credentials.ssh_passphrase = Lookup(data, "passphrase");
  credentials.known_hosts = Lookup(data, "known_hosts");
  const std::string name(secret_name);
  if (!token.empty() && !password.empty()) {
    return absl::InvalidArgumentError(
        StrCat("Secret ", name, " has both 'token' and 'password'; keep one of them"));
  }
  if (!password.empty() && credentials.username.empty()) {
    return absl::InvalidArgumentError(StrCat("Secret ", name, " has 'password' but no 'username'"));
  }
  if (!credentials.ssh_passphrase.empty() && credentials.ssh_private_key.empty()) {
    return absl::InvalidArgumentError(
        StrCat("Secret ", name, " has 'passphrase' but no 'ssh-privatekey'"));
  }
  credentials.password = token.empty() ? password : token;
  if (credentials.empty()) {
    return absl::InvalidArgumentError(
        StrCat("Secret ", name, " has none of 'token', 'username'+'password' or 'ssh-privatekey'"));
  }
  return credentials;
}

CredentialChoice ChooseCredential(const GitCredentials& credentials, const char* username_from_url,
                                  unsigned int allowed_types) {
  const bool url_names_user = username_from_url != nullptr && *username_from_url != '\0';
  // SSH first asks for a user name alone when the URL has none.
  if ((allowed_types & GIT_CREDENTIAL_USERNAME) != 0 && credentials.has_ssh()) {
    return {CredentialChoice::kUsername, url_names_user ? username_from_url : "git"};
  }
  if ((allowed_types & GIT_CREDENTIAL_SSH_MEMORY) != 0 && credentials.has_ssh()) {
    return {CredentialChoice::kSshKey, url_names_user ? username_from_url : "git"};
  }
  if ((allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) != 0 && credentials.has_https()) {
    std::string user = !credentials.username.empty() ? credentials.username
                       : url_names_user              ? std::string(username_from_url)
                                                     : std::string(kTokenUserName);
    return {CredentialChoice::kUserPass, std::move(user)};
  }
  return {};
}

bool KnownHostsListKey(std::string_view known_hosts, std::string_view host, int port,
                       std::string_view host_key) {
  const std::string wanted =
      port == 22 ? std::string(host) : StrCat("[", std::string(host), "]:", port);
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(known_hosts.data(), known_hosts.size()), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#' || line.front() == '@') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.size() < 3) continue;
    bool names_host = false;
    for (absl::string_view name : absl::StrSplit(fields[0], ',')) names_host |= name == wanted;
    if (!names_host) continue;
    std::string key;
    if (absl::Base64Unescape(fields[2], &key) && std::string_view(key) == host_key) return true;
  }
  return false;
}

CredentialSession::CredentialSession(const GitCredentials* credentials, std::string url)
    : credentials_(credentials), url_(std::move(url)) {
  EnsureInitialized();
}

void CredentialSession::Install(git_remote_callbacks& callbacks) {
  callbacks.credentials = &CredentialSession::AcquireCallback;
  callbacks.certificate_check = &CredentialSession::CertificateCallback;
  callbacks.payload = this;
}

int CredentialSession::AcquireCallback(git_credential** out, const char* url,
                                       const char* username_from_url, unsigned int allowed_types,
                                       void* payload) {
  auto* session = static_cast<CredentialSession*>(payload);
  if (url != nullptr && !session->SameServer(url)) return session->RefuseRedirect(url);
  return session->Acquire(out, username_from_url, allowed_types);
}

bool CredentialSession::SameServer(std::string_view asked_by) const {
  // A server may send the fetch elsewhere (an HTTP redirect); libgit2 then
  // asks again with the new URL. The Secret was given for the URL of the
  // item, so another scheme or host gets nothing.
  if (credentials_ == nullptr || credentials_->empty()) return true;
  std::optional<canhazgpu::UrlHost> first = canhazgpu::ParseUrlHost(url_);
  std::optional<canhazgpu::UrlHost> now = canhazgpu::ParseUrlHost(asked_by);
  return first && now && *first == *now;
}

int CredentialSession::RefuseRedirect(std::string_view asked_by) {
  std::optional<canhazgpu::UrlHost> now = canhazgpu::ParseUrlHost(asked_by);
  failure_ = absl::PermissionDeniedError(
      StrCat(url_, " sent the fetch on to ",
             now ? StrCat(now->scheme, "://", now->host) : std::string(asked_by),
             "; the credential is sent only to where the item points"));
  git_error_set_str(GIT_ERROR_NET, std::string(failure_->message()).c_str());
  return GIT_EAUTH;
}

int CredentialSession::CertificateCallback(git_cert* cert, int valid, const char* host,
                                           void* payload) {
  return static_cast<CredentialSession*>(payload)->CheckCertificate(cert, valid, host);
}

int CredentialSession::Acquire(git_credential** out, const char* username_from_url,
                               unsigned int allowed_types) {
  static const GitCredentials kNone;
  CredentialChoice choice = ChooseCredential(credentials_ != nullptr ? *credentials_ : kNone,
                                             username_from_url, allowed_types);
  if (choice.kind == CredentialChoice::kNone) {
    failure_ = absl::PermissionDeniedError(
        credentials_ == nullptr || credentials_->empty()
            ? StrCat(url_,
                     " requires authentication; reference a Secret with 'token' (or "
                     "'username'+'password') for HTTPS or 'ssh-privatekey' for SSH")
            : StrCat("authentication failed for ", url_,
                     ": the server wants a kind of credential the Secret does not have"));
    git_error_set_str(GIT_ERROR_NET, std::string(failure_->message()).c_str());
    return GIT_EAUTH;
  }
  // A user name is a step before the key, not an attempt of its own.
  if (choice.kind != CredentialChoice::kUsername && ++attempts_ > 1) {
    failure_ = absl::PermissionDeniedError(StrCat(
        "authentication failed for ", url_, ": the server rejected the credentials in the Secret"));
    git_error_set_str(GIT_ERROR_NET, std::string(failure_->message()).c_str());
    return GIT_EAUTH;
  }
  switch (choice.kind) {
    case CredentialChoice::kUsername:
      return git_credential_username_new(out, choice.username.c_str());
    case CredentialChoice::kUserPass:
      return git_credential_userpass_plaintext_new(out, choice.username.c_str(),
                                                   credentials_->password.c_str());
    case CredentialChoice::kSshKey:
      return git_credential_ssh_key_memory_new(
          out, choice.username.c_str(), /*publickey=*/nullptr,
          credentials_->ssh_private_key.c_str(),
          credentials_->ssh_passphrase.empty() ? nullptr : credentials_->ssh_passphrase.c_str());
    case CredentialChoice::kNone:
      break;
  }
  return GIT_PASSTHROUGH;
}

int CredentialSession::CheckCertificate(git_cert* cert, int /*valid*/, const char* host) {
  // TLS, and SSH without known_hosts in the Secret: libgit2 decides (CA
  // verification; ~/.ssh/known_hosts), and refuses what it cannot verify.
  if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2 || credentials_ == nullptr ||
      credentials_->known_hosts.empty()) {
    return GIT_PASSTHROUGH;
  }
  const auto* hostkey = reinterpret_cast<const git_cert_hostkey*>(cert);
  if ((hostkey->type & GIT_CERT_SSH_RAW) != 0 &&
      KnownHostsListKey(credentials_->known_hosts, host != nullptr ? host : "", SshPort(url_),
                        std::string_view(hostkey->hostkey, hostkey->hostkey_len))) {
    return 0;
  }
  failure_ = absl::PermissionDeniedError(
      StrCat("the SSH host key of ", host != nullptr ? host : url_,
             " is not in the Secret's known_hosts; add the server's key to it"));
  git_error_set_str(GIT_ERROR_SSH, std::string(failure_->message()).c_str());
  return GIT_ECERTIFICATE;
}

std::optional<absl::Status> CredentialSession::Failure() const { return failure_; }

}  // namespace canhazgpu::git
