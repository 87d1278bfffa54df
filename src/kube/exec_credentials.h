// Exec credential plugins (a kubeconfig's `user.exec`), run the way client-go
// runs them: the command (looked up on PATH when it has no '/') with its
// arguments, no shell, the inherited environment plus the kubeconfig's `env`
// and KUBERNETES_EXEC_INFO, stdin on /dev/null and stderr passed through.
// Its stdout is an ExecCredential of the configured apiVersion carrying a
// bearer token and/or a client certificate and key, valid until its
// expirationTimestamp. We are never interactive, so a plugin that asks for
// interactiveMode Always is refused. Unlike client-go, a run is bounded: it
// is killed after a timeout, and at most 1 MiB of stdout is read.
//
// ExecAuthenticator caches the credential for a Client. Thread-safe: one
// plugin run at a time; threads that need a credential meanwhile wait for
// that run and share its result.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::kube {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1Beta1[] = "client.authentication.k8s.io/v1beta1";

// What a plugin printed, decoded.
struct ExecCredential {
  std::string token;  // may be empty when a certificate is given
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<TimePoint> expiry;  // none: valid until the server answers 401
};

struct ExecOptions {
  std::chrono::milliseconds timeout{60'000};  // then the plugin is killed
  size_t max_output = 1 << 20;                // bytes of stdout
};

// KUBERNETES_EXEC_INFO for `config`'s plugin: the ExecCredential client-go
// passes, with spec.cluster when provideClusterInfo is set.
std::string ExecInfo(const RestConfig& config);

// Decodes a plugin's stdout. `exec` gives the command (for messages) and the
// apiVersion the output must have.
absl::StatusOr<ExecCredential> ParseExecCredential(const ExecConfig& exec, std::string_view output);

// Runs `config.exec` once and decodes what it printed. Every error is one
// line naming the command: not found (with the kubeconfig's installHint),
// a non-zero exit status, killed at the timeout, too much output, or output
// that is not a credential.
absl::StatusOr<ExecCredential> RunExecPlugin(const RestConfig& config,
                                             const ExecOptions& options = {});

class ExecAuthenticator {
 public:
  // InvalidArgument when `config.exec` is one client-go would refuse (an
  // unknown apiVersion or interactiveMode, v1 without interactiveMode) or
  // one we cannot run (interactiveMode Always). `clock` (null: the system's)
  // decides expiry and must outlive the authenticator.
  static absl::StatusOr<std::unique_ptr<ExecAuthenticator>> Create(const RestConfig& config,
                                                                   ExecOptions options = {},
                                                                   const Clock* clock = nullptr);

  // The cached credential while it has not expired, else a fresh one from
  // the plugin (errors are not cached: the next call runs it again).
  absl::StatusOr<std::shared_ptr<const ExecCredential>> Get();

  // The server refused `used` (401): forget it, unless a newer credential
  // has replaced it already, so concurrent refusals run the plugin once.
  void Forget(const ExecCredential* used);

 private:
  ExecAuthenticator(const RestConfig& config, ExecOptions options, const Clock& clock);

  RestConfig config_;  // the exec and cluster fields
  ExecOptions options_;
  const Clock& clock_;
  Mutex mu_;  // held while the plugin runs
  std::shared_ptr<const ExecCredential> cached_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::kube
