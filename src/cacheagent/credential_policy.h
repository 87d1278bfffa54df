// Whose credentials a cache item may use, and where they may go (ADR 0013).
// A CachePlan is cluster-wide and its author names a Secret and a source
// URL; the agent that reads the Secret is root on every node with read
// access to Secrets. So the Secret, not the plan, decides:
//   - it lives in a namespace the cluster administrator listed
//     (k8shazgpu-node --cache-secret-namespaces, canhazgpu-system by
//     default), which is where deploy/ grants the agent `get` on Secrets;
//   - it names the hosts it is for in the annotation
//     canhazgpu.dev/credential-hosts ("github.com, huggingface.co"); a
//     Secret without it is never used, so no Secret made for something else
//     can be borrowed;
//   - its credential goes only to those hosts, over https (or ssh), never
//     over plain http or git://, and not to where a server redirects.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cacheplan/types.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cacheagent {

inline constexpr char kCredentialHostsAnnotation[] = "canhazgpu.dev/credential-hosts";
inline constexpr char kDefaultSecretNamespace[] = "canhazgpu-system";

struct CredentialPolicy {
  std::vector<std::string> secret_namespaces = {kDefaultSecretNamespace};
  // Plain http and git:// to a loopback host (127.0.0.0/8, ::1,
  // localhost): the test servers of this repository and of a simulated
  // cluster. Traffic that never leaves the machine; still off by default.
  bool allow_plain_http_to_loopback = false;
};

// PermissionDenied, naming the namespaces allowed, unless the Secret's
// namespace is one of them. Checked before the Secret is read.
absl::Status CheckSecretNamespace(const cacheplan::SecretRef& ref, const CredentialPolicy& policy);

// The hosts a Secret (the API object) is for, lowercase and without ports.
// PermissionDenied, saying how to add it, when the annotation is missing or
// names no host.
absl::StatusOr<std::vector<std::string>> CredentialHosts(std::string_view secret_name,
                                                         const nlohmann::json& secret);

// OK when a credential from `secret_name`, for `hosts`, may be sent to
// `url` (a git URL or an HTTP endpoint): https or ssh (or, by the policy,
// plain http to loopback) and a host in the list. PermissionDenied, naming
// the host or the scheme, otherwise.
absl::Status CheckCredentialUrl(std::string_view secret_name, const std::vector<std::string>& hosts,
                                std::string_view url, const CredentialPolicy& policy);

// The same for a registry host ("ghcr.io", "127.0.0.1:5000"): the
// container runtime chooses the transport, so only the host is checked.
absl::Status CheckCredentialRegistry(std::string_view secret_name,
                                     const std::vector<std::string>& hosts,
                                     std::string_view registry);

}  // namespace canhazgpu::cacheagent
