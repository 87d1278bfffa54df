#include "cacheagent/credential_policy.h"

#include <algorithm>

#include "core/strings.h"
#include "core/url_host.h"

namespace canhazgpu::cacheagent {
namespace {

absl::Status NotForHost(std::string_view secret_name, const std::vector<std::string>& hosts,
                        std::string_view host) {
  return absl::PermissionDeniedError(StrCat(
      "secret ", secret_name, " is for ", Join(hosts, ", "), " (annotation ",
      kCredentialHostsAnnotation, "), not for ", host, "; its credential is not sent there"));
}

bool Listed(const std::vector<std::string>& hosts, const std::string& host) {
  return std::find(hosts.begin(), hosts.end(), host) != hosts.end();
}

}  // namespace

absl::Status CheckSecretNamespace(const cacheplan::SecretRef& ref, const CredentialPolicy& policy) {
  const auto& allowed = policy.secret_namespaces;
  if (std::find(allowed.begin(), allowed.end(), ref.namespace_name) != allowed.end()) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(StrCat(
      "secret ", ref.namespace_name, "/", ref.name, ": this node reads pull secrets only in ",
      allowed.empty() ? std::string("no namespace") : Join(allowed, ", "),
      " (k8shazgpu-node --cache-secret-namespaces)"));
}

absl::StatusOr<std::vector<std::string>> CredentialHosts(std::string_view secret_name,
                                                         const nlohmann::json& secret) {
  std::vector<std::string> hosts;
  const nlohmann::json* annotations = nullptr;
  if (auto m = secret.find("metadata"); m != secret.end() && m->is_object()) {
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) annotations = &*a;
  }
  if (annotations != nullptr) {
    if (auto v = annotations->find(kCredentialHostsAnnotation);
        v != annotations->end() && v->is_string()) {
      const std::string& listed = v->get_ref<const std::string&>();
      for (std::string_view part : Split(listed, ',', /*skip_empty=*/true)) {
        std::string host = HostWithoutPort(Trim(part));
        if (!host.empty() && !Listed(hosts, host)) hosts.push_back(std::move(host));
      }
    }
  }
  if (hosts.empty()) {
    return absl::PermissionDeniedError(
        StrCat("secret ", secret_name, " does not say which hosts it is for; annotate it with ",
               kCredentialHostsAnnotation, "=HOST[,HOST...] to let the cache send it there"));
  }
  return hosts;
}

absl::Status CheckCredentialUrl(std::string_view secret_name, const std::vector<std::string>& hosts,
                                std::string_view url, const CredentialPolicy& policy) {
  std::optional<UrlHost> where = ParseUrlHost(url);
  if (!where || where->host.empty()) {
    return absl::PermissionDeniedError(
        StrCat("secret ", secret_name, ": ", url, " names no host to send a credential to"));
  }
  const bool encrypted = where->scheme == "https" || where->scheme == "ssh";
  const bool plain = where->scheme == "http" || where->scheme == "git";
  if (!encrypted &&
      !(plain && policy.allow_plain_http_to_loopback && IsLoopbackHost(where->host))) {
    return absl::PermissionDeniedError(StrCat("secret ", secret_name,
                                              " is sent only over https or ssh, and ", url, " is ",
                                              where->scheme, "://; use an https:// URL"));
  }
  if (!Listed(hosts, where->host)) return NotForHost(secret_name, hosts, where->host);
  return absl::OkStatus();
}

absl::Status CheckCredentialRegistry(std::string_view secret_name,
                                     const std::vector<std::string>& hosts,
                                     std::string_view registry) {
  const std::string host = HostWithoutPort(registry);
  if (!Listed(hosts, host)) return NotForHost(secret_name, hosts, host);
  return absl::OkStatus();
}

}  // namespace canhazgpu::cacheagent
