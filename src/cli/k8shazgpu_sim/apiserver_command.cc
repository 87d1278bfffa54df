// `k8shazgpu-sim apiserver`:
//   k8shazgpu-sim apiserver [--listen 127.0.0.1:0] [--tls] [--token TOKEN]
//       [--deny VERB:RESOURCE,...] [--event-window N] --kubeconfig-out FILE
// runs the API server in the foreground, writes a kubeconfig for itself to
// FILE (atomically, once it serves), logs one line per request to stderr and
// stops cleanly on SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/common/exit_code.h"
#include "cli/common/flags.h"
#include "cli/common/listen_address.h"
#include "cli/common/stop_signals.h"
#include "cli/k8shazgpu_sim/command_flags.h"
#include "cli/k8shazgpu_sim/commands.h"
#include "cli/k8shazgpu_sim/sim_kubeconfig.h"
#include "core/file_write.h"
#include "core/mutex.h"
#include "core/strings.h"
#include "kubesim/api_server.h"
#include "kubesim/certificates.h"
#include "kubesim/object_store.h"

namespace canhazgpu::sim {
namespace {

const std::vector<cli::FlagSpec> kApiServerFlags = {
    {.name = "listen",
     .has_value = true,
     .value_name = "HOST:PORT",
     .help = "address to serve on; port 0 picks a free one",
     .default_value = "127.0.0.1:0"},
    {.name = "kubeconfig-out",
     .has_value = true,
     .value_name = "FILE",
     .help = "write a kubeconfig for this server here once it serves (required)"},
    {.name = "tls",
     .help = "serve HTTPS with a generated CA; clients need the kubeconfig's certificate"},
    {.name = "token",
     .has_value = true,
     .value_name = "TOKEN",
     .help = "require this bearer token on every request (401 otherwise)"},
    {.name = "deny",
     .has_value = true,
     .value_name = "VERB:RESOURCE,...",
     .help = "answer these 403 Forbidden (VERB or RESOURCE may be *)",
     .kind = cli::FlagKind::kList},
    {.name = "event-window",
     .has_value = true,
     .value_name = "N",
     .help = "watch events kept for resuming; older versions get 410 Gone",
     .kind = cli::FlagKind::kPositiveInt,
     .max = 10'000'000,
     .default_value = "10000"},
    {.name = "help", .short_name = 'h', .help = "show this help"},
};

constexpr char kApiServerUsage[] =
    "usage: k8shazgpu-sim apiserver --kubeconfig-out FILE [flags]\n"
    "Serves a simulated Kubernetes API server from memory.\n";

}  // namespace

int ApiServerMain(const std::vector<std::string>& args) {
  cli::ParsedFlags flags;
  if (std::optional<int> exit =
          ParseCommandFlags(args, kApiServerFlags, "apiserver", kApiServerUsage, &flags)) {
    return *exit;
  }
  auto value = [&](const char* name) { return FlagOrDefault(flags, kApiServerFlags, name); };
  const std::string out_path = value("kubeconfig-out");
  if (out_path.empty()) {
    std::cerr << "k8shazgpu-sim: apiserver: --kubeconfig-out FILE is required\n";
    return cli::kExitUsage;
  }
  absl::StatusOr<cli::ListenAddress> listen = cli::ParseListenAddress(value("listen"));
  if (!listen.ok()) {
    std::cerr << "k8shazgpu-sim: --listen: " << listen.status().message() << "\n";
    return cli::kExitUsage;
  }
  const std::string host = listen->host;
  const int port = listen->port;
  sigset_t signals = cli::BlockStopSignals();  // before any thread starts

  kubesim::ObjectStore store(static_cast<size_t>(std::stol(value("event-window"))));
  Mutex log_mu;
  kubesim::ApiServerOptions options{.token = value("token"), .log = [&](const std::string& line) {
                                      MutexLock lock(log_mu);
                                      std::cerr << line << "\n";
                                    }};
  const std::string deny = value("deny");  // Split returns views into it
  for (std::string_view rule : Split(deny, ',', /*skip_empty=*/true)) {
    options.deny.emplace_back(rule);
  }
  std::optional<kubesim::Certificates> certs;
  if (flags.Has("tls")) {
    absl::StatusOr<kubesim::Certificates> made = kubesim::GenerateCertificates();
    if (!made.ok()) {
      std::cerr << "k8shazgpu-sim: " << made.status().message() << "\n";
      return 1;
    }
    certs = *std::move(made);
    options.tls_cert_pem = certs->server_cert_pem;
    options.tls_key_pem = certs->server_key_pem;
    options.tls_client_ca_pem = certs->ca_pem;
  }
  kubesim::ApiServer server(store, options);
  absl::StatusOr<int> bound = server.Bind(host, port);
  if (!bound.ok()) {
    std::cerr << "k8shazgpu-sim: " << bound.status().message() << "\n";
    return 1;
  }
  const bool ipv6 = host.find(':') != std::string::npos;
  const std::string url =
      StrCat(certs ? "https://" : "http://", ipv6 ? "[" : "", host, ipv6 ? "]" : "", ":", *bound);
  // 0600: the kubeconfig may hold a token and a private key.
  if (absl::Status s = WriteFileAtomically(
          out_path, SimKubeconfig(url, options.token, certs ? &*certs : nullptr), 0600);
      !s.ok()) {
    std::cerr << "k8shazgpu-sim: " << s.message() << "\n";
    return 1;
  }
  std::cerr << "k8shazgpu-sim: serving on " << url << "; kubeconfig in " << out_path << "\n";
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.Stop();
  });
  server.Serve();
  // Serve returned on its own (it failed): release the waiter.
  kill(getpid(), SIGTERM);
  waiter.join();
  std::cerr << "k8shazgpu-sim: stopped\n";
  return 0;
}

}  // namespace canhazgpu::sim
