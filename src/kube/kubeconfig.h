// Where the API server is and how to authenticate to it, resolved exactly as
// kubectl resolves it (client-go's clientcmd loading rules):
//   1. --kubeconfig FILE (which must exist), else
//   2. KUBECONFIG, a colon-separated list merged first-wins: the first file
//      to name a cluster, user or context defines it, the first non-empty
//      current-context is the current context; missing files are skipped,
//   3. else ~/.kube/config (missing: empty).
// The context is --context, else current-context. When nothing was named and
// the files hold no context at all, inside a pod, the service account is
// used (KUBERNETES_SERVICE_HOST/PORT and /var/run/secrets/kubernetes.io/
// serviceaccount). Relative file paths in a kubeconfig are relative to the
// file that holds them. Pure functions over LoadOptions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::kube {

// A kubeconfig's `user.exec`: a program that prints an ExecCredential
// (client.authentication.k8s.io/v1 or v1beta1) with a token or a client
// certificate (exec_credentials.h runs it).
struct ExecConfig {
  std::string api_version;
  std::string command;  // resolved against the kubeconfig's directory when it has a '/'
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
  bool provide_cluster_info = false;
  std::string interactive_mode;  // Never, IfAvailable (default), Always
};

// One resolved connection.
struct RestConfig {
  std::string server;  // https://host:port, without a trailing '/'
  std::string ca_pem;  // empty: the system's roots
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;  // when set, read for every request (rotated tokens)
  std::string username;
  std::string password;
  std::optional<ExecConfig> exec;
  std::string namespace_name = "default";  // the context's namespace
  // Whether the context (or the service account) named it; false: the
  // "default" above is only the fallback.
  bool namespace_named = false;
  std::string context;  // empty in a pod
  std::string source;   // the file(s) or "in-cluster", for messages
};

// What the loading rules read, taken from the process by FromProcess and
// set by hand in tests.
struct LoadOptions {
  std::string kubeconfig_flag;                // --kubeconfig
  std::string context_flag;                   // --context
  std::optional<std::string> kubeconfig_env;  // KUBECONFIG, if set
  std::string home;                           // $HOME
  std::string service_host;                   // KUBERNETES_SERVICE_HOST
  std::string service_port;                   // KUBERNETES_SERVICE_PORT
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  static LoadOptions FromProcess(std::string kubeconfig_flag, std::string context_flag);
};

// Bounds on what is read: a kubeconfig, and a token, key or certificate file.
inline constexpr size_t kMaxKubeconfigBytes = 4 << 20;
inline constexpr size_t kMaxCredentialFileBytes = 1 << 20;

// The connection the options select. Errors are one line naming the file,
// context, cluster or user at fault: a missing --kubeconfig file, YAML that
// is not a kubeconfig, an unknown context, a context without a cluster or
// server, an `auth-provider` (removed from kubectl in 1.26), a CA file
// together with insecure-skip-tls-verify, basic auth together with a token.
absl::StatusOr<RestConfig> LoadRestConfig(const LoadOptions& options);

// The service account's connection inside a pod; FailedPrecondition when
// KUBERNETES_SERVICE_HOST or _PORT is not set.
absl::StatusOr<RestConfig> InClusterConfig(const LoadOptions& options);

}  // namespace canhazgpu::kube
