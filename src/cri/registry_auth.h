// Registry credentials for image pulls, read from a Kubernetes pull secret:
// the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson` Secret, or
// the `.dockercfg` of the legacy `kubernetes.io/dockercfg` type. Keys are
// matched on the registry host the way the kubelet does: scheme and path
// ignored, Docker Hub's aliases all one host, `*.example.com` matching one
// label. Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::cri {

// What PullImage's AuthConfig carries, decoded: `auth` in a config file is
// split into username and password here.
struct RegistryAuth {
  std::string username;
  std::string password;
  std::string server_address;  // the registry host, normalised
  std::string identity_token;
  std::string registry_token;

  bool operator==(const RegistryAuth&) const = default;
};

inline constexpr std::string_view kDockerHub = "docker.io";

// "https://index.docker.io/v1/" -> "docker.io", "Quay.IO" -> "quay.io",
// "http://registry.local:5000/x" -> "registry.local:5000": the scheme and
// any path dropped, lower-cased, Docker Hub's aliases (index.docker.io,
// registry-1.docker.io, registry.hub.docker.com) made "docker.io".
std::string NormalizeRegistryHost(std::string_view host);

// The credentials `docker_config` holds for `registry_host`; nullopt when
// it has none for that host. `docker_config` is the file's bytes, in either
// form: {"auths": {KEY: ENTRY}} (.dockerconfigjson) or {KEY: ENTRY}
// (.dockercfg). InvalidArgument, naming the key, when the JSON or an entry
// is malformed (including an `auth` that is not base64 of "user:password").
absl::StatusOr<std::optional<RegistryAuth>> AuthFor(std::string_view docker_config,
                                                    std::string_view registry_host);

// The same for a Secret's decoded data: picks `.dockerconfigjson` or
// `.dockercfg` by the Secret's type. A Secret of another type, or missing
// its key, is InvalidArgument naming `secret_name`.
absl::StatusOr<std::optional<RegistryAuth>> AuthFromPullSecret(
    std::string_view secret_name, std::string_view secret_type,
    const std::map<std::string, std::string>& data, std::string_view registry_host);

}  // namespace canhazgpu::cri
