// What every k8shazgpu command receives from main(): the global options
// (--kubeconfig, --context, -n, -o, --no-color; before or after the
// command), the OS user, a clock, whether the terminal is interactive, and
// the connection to the cluster, made on first use with short timeouts so
// that an unreachable API server is one clear line within seconds. Also
// the frame every command runs in (RunCommandBody) and the one place API
// errors become a line a person can act on (Explain). Not thread-safe: one
// command, one thread owns it (the client it holds is thread-safe).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "core/clock.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace canhazgpu::cli::k8s {

struct ClusterDefaults;  // cluster_defaults.h

// The client's bounds: a request gives up after kRequestTimeout (or
// K8SHAZGPU_REQUEST_TIMEOUT_MS) and is retried at most kRequestRetries
// times, so a dead server is reported in well under a minute instead of
// client-go's default patience.
inline constexpr std::chrono::milliseconds kRequestTimeout{10'000};
inline constexpr int kRequestRetries = 2;

struct Context {
  // Global options.
  std::string kubeconfig;      // --kubeconfig
  std::string kube_context;    // --context
  std::string namespace_flag;  // -n/--namespace
  std::string output;          // -o: "", json, yaml or wide
  bool no_color = false;

  std::string user;  // the OS user, for labels and names
  const Clock* clock = nullptr;
  bool stdin_tty = false;
  bool stderr_tty = false;
  std::function<std::optional<std::string>(const std::string&)> getenv =
      [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };

  // The connection, after Connect(): the client, the namespace in effect
  // (-n, else the kubeconfig context's, else "default") and the server.
  std::unique_ptr<kube::Client> client;
  std::string namespace_name;
  kube::RestConfig rest;
  // The cluster's defaults ConfigMap once read (by Connect() for the
  // namespace hint, or by a command), so a run reads it once.
  std::shared_ptr<const ClusterDefaults> cluster_defaults;
  std::chrono::milliseconds request_timeout = kRequestTimeout;

  // Loads the kubeconfig as kubectl does and makes the client; idempotent.
  absl::Status Connect();
  // An environment variable, or `fallback` when unset or empty.
  std::string Env(const std::string& name, const std::string& fallback) const;
};

// The global flags, accepted by every command.
const std::vector<FlagSpec>& GlobalFlags();

// Parses `args` against the command's flags plus the global ones, checks
// every value, and applies the global ones to `ctx`.
absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx);

// `status` from a kube::Client call, reworded where the client's line does
// not say what to do: a 403 names the verb and resource and says RBAC is
// the cause; an unreachable or slow server names the server and the
// kubeconfig; a missing namespace says so. Other errors pass unchanged.
// Explaining twice (a helper, then the command's edge) says it once.
absl::Status Explain(const absl::Status& status, const Context& ctx);

// Prints "k8shazgpu: <message>" on stderr and returns the exit code
// (cli/common/exit_code.h).
int Fail(const absl::Status& status);

// The frame of every command: parses `args` against `specs` (plus the
// global flags), runs `body`, and turns a failure into one stderr line
// and its exit code. A body that has its own exit code (run: the
// container's) returns it; the frame returns OK's 0 otherwise.
using CommandBody = std::function<absl::StatusOr<int>(Context&, const ParsedFlags&)>;
int RunCommandBody(Context& ctx, const std::vector<std::string>& args, std::vector<FlagSpec> specs,
                   const std::string& command, const CommandBody& body);

}  // namespace canhazgpu::cli::k8s
