// The dashboard's HTTP server: the page and its assets from the binary, a
// read-only JSON API (/api/status, /api/queue, /api/report?days=N,
// /api/hosts),
// /healthz and Prometheus /metrics. No request reaches a shell; bad
// requests get a 4xx and the server goes on; unknown Host names get 403
// (DNS rebinding); slow clients cannot hold the server (httpfront/http_front.h).
// Snapshots are shared between requests for up to a second (the remote
// hosts' for kHostsMaxAge), so many viewers cost what one does.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::web {

using Json = nlohmann::ordered_json;

// Where the data comes from; called from server threads, but never two at
// a time (the server serialises them), so they may share one store.
struct DashboardSource {
  std::string host_name;
  std::function<absl::StatusOr<Json>()> status;  // `status --json` array
  std::function<absl::StatusOr<Json>()> queue;   // `queue --json` object
  std::function<absl::StatusOr<Json>(int days)> report;
  // Why the last status or queue was collected read-only (the state file
  // could not be written); empty when it was written. /api/status shows it.
  std::function<std::string()> state_warning;
  // This host's line of the hosts overview (/api/hosts), from one status
  // and queue snapshot: `status --summary --json`'s value for a host.
  std::function<Json(const Json& status, const Json& queue)> summary;
  // The other hosts' lines, [{"host", "summary"} | {"host", "error"}], as
  // `status --all --summary` asks them; unset: this host only. Slow (ssh),
  // so it runs on a thread of its own (hosts_cache.h), possibly while the
  // functions above run: it must not touch their store.
  std::function<Json()> remote_hosts;
  // Simulated data (`web --demo`): /api/status says so, and the page too.
  bool demo = false;
};

// How old the remote hosts' overview may be before it is asked again.
inline constexpr std::chrono::seconds kHostsMaxAge{15};

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  // Event-loop threads; a connection holds one only while its whole request
  // is being answered, never while the client is slow.
  int threads = 4;
  int max_client_connections = 16;  // open at once by one client (a user, or a remote address)
  // Host names the dashboard answers to besides loopback names, the listen
  // address and the machine's name (host_allowlist.h).
  std::vector<std::string> allowed_hosts;
  // Called once listening, with the port bound.
  std::function<void(int port)> on_listening;
};

// SIGINT and SIGTERM: the signals that stop the server.
sigset_t StopSignals();

// Serves until SIGINT or SIGTERM (which must be blocked in every thread
// before calling, e.g. pthread_sigmask(SIG_BLOCK, StopSignals()); the server
// waits for them itself).
absl::Status ServeDashboard(const ServeOptions& options, DashboardSource source);

// True for addresses only this machine can reach.
bool IsLoopback(const std::string& host);

}  // namespace canhazgpu::web
