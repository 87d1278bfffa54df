#include "cri/registry_auth.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "absl/strings/escaping.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cri {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kDockerHubAliases = {
    "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", "docker.io"};

absl::Status Malformed(std::string_view key, std::string_view why) {
  return absl::InvalidArgumentError(
      StrCat("registry credentials for \"", key, "\" are malformed: ", why));
}

// A string member of `entry`; "" when absent.
absl::StatusOr<std::string> StringField(const json& entry, const char* name, std::string_view key) {
  auto it = entry.find(name);
  if (it == entry.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return Malformed(key, StrCat("\"", name, "\" is not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<RegistryAuth> DecodeEntry(const json& entry, std::string_view key,
                                         std::string_view host) {
  if (!entry.is_object()) {
    return Malformed(key, "the entry is not a JSON object");
  }
  RegistryAuth auth;
  ASSIGN_OR_RETURN(auth.username, StringField(entry, "username", key));
  ASSIGN_OR_RETURN(auth.password, StringField(entry, "password", key));
  ASSIGN_OR_RETURN(auth.identity_token, StringField(entry, "identitytoken", key));
  ASSIGN_OR_RETURN(auth.registry_token, StringField(entry, "registrytoken", key));
  ASSIGN_OR_RETURN(std::string encoded, StringField(entry, "auth", key));
  // As the kubelet's credential provider does: a present `auth` wins over
  // separate username and password fields.
  if (!encoded.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(encoded, &decoded)) {
      return Malformed(key, "\"auth\" is not base64");
    }
    std::size_t colon = decoded.find(':');
    if (colon == std::string::npos) {
      return Malformed(key, "\"auth\" does not decode to username:password");
    }
    auth.username = decoded.substr(0, colon);
    auth.password = decoded.substr(colon + 1);
  }
  auth.server_address = std::string(host);
  return auth;
}

// "*.example.com" matches "a.example.com" (one label, as the kubelet's
// glob on each dot-separated part); ports must be equal.
bool WildcardMatches(std::string_view pattern, std::string_view host) {
  if (!pattern.starts_with("*.")) {
    return false;
  }
  std::size_t dot = host.find('.');
  return dot != std::string_view::npos && dot > 0 && host.substr(dot) == pattern.substr(1);
}

}  // namespace

std::string NormalizeRegistryHost(std::string_view host) {
  host = Trim(host);
  if (std::size_t scheme = host.find("://"); scheme != std::string_view::npos) {
    host.remove_prefix(scheme + 3);
  }
  host = host.substr(0, host.find('/'));
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (std::find(kDockerHubAliases.begin(), kDockerHubAliases.end(), lower) !=
      kDockerHubAliases.end()) {
    return std::string(kDockerHub);
  }
  return lower;
}

absl::StatusOr<std::optional<RegistryAuth>> AuthFor(std::string_view docker_config,
                                                    std::string_view registry_host) {
  json config = json::parse(docker_config.begin(), docker_config.end(), nullptr,
                            /*allow_exceptions=*/false);
  if (config.is_discarded()) {
    return absl::InvalidArgumentError("registry credentials are not valid JSON");
  }
  if (!config.is_object()) {
    return absl::InvalidArgumentError("registry credentials are not a JSON object");
  }
  // .dockerconfigjson nests the entries under "auths"; .dockercfg is the
  // entries themselves.
  const json* entries = &config;
  if (auto auths = config.find("auths"); auths != config.end()) {
    if (!auths->is_object()) {
      return absl::InvalidArgumentError("registry credentials: \"auths\" is not a JSON object");
    }
    entries = &*auths;
  }
  std::string host = NormalizeRegistryHost(registry_host);
  const json* exact = nullptr;
  const json* wildcard = nullptr;
  std::string exact_key;
  std::string wildcard_key;
  for (const auto& [key, entry] : entries->items()) {
    std::string normalised = NormalizeRegistryHost(key);
    if (normalised == host && exact == nullptr) {
      exact = &entry;
      exact_key = key;
    } else if (WildcardMatches(normalised, host) && wildcard == nullptr) {
      wildcard = &entry;
      wildcard_key = key;
    }
  }
  // The most specific key wins, as in the kubelet's keyring.
  if (exact != nullptr) {
    return DecodeEntry(*exact, exact_key, host);
  }
  if (wildcard != nullptr) {
    return DecodeEntry(*wildcard, wildcard_key, host);
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<RegistryAuth>> AuthFromPullSecret(
    std::string_view secret_name, std::string_view secret_type,
    const std::map<std::string, std::string>& data, std::string_view registry_host) {
  std::string key;
  if (secret_type == "kubernetes.io/dockerconfigjson") {
    key = ".dockerconfigjson";
  } else if (secret_type == "kubernetes.io/dockercfg") {
    key = ".dockercfg";
  } else {
    return absl::InvalidArgumentError(
        StrCat("pull secret ", secret_name, " has type \"", secret_type,
               "\"; expected kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg"));
  }
  auto it = data.find(key);
  if (it == data.end()) {
    return absl::InvalidArgumentError(StrCat("pull secret ", secret_name, " has no ", key, " key"));
  }
  auto auth = AuthFor(it->second, registry_host);
  if (!auth.ok()) {
    return absl::InvalidArgumentError(
        StrCat("pull secret ", secret_name, ": ", auth.status().message()));
  }
  return auth;
}

}  // namespace canhazgpu::cri
