#include "web/dashboard_server.h"

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "core/json_text.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "httpfront/http_front.h"
#include "httpfront/httplib_exchange.h"
#include "web/assets.h"
#include "web/host_allowlist.h"
#include "web/hosts_cache.h"
#include "web/metrics.h"

namespace canhazgpu::web {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr auto kSnapshotTtl = std::chrono::seconds(1);
constexpr auto kReportTtl = std::chrono::seconds(30);
constexpr int kMaxDays = 3650;
constexpr size_t kMaxBody = 64 * 1024;

// The status and queue as of at most kSnapshotTtl ago, and how long
// collecting them took.
struct Snapshot {
  absl::StatusOr<Json> status = absl::UnavailableError("not collected");
  absl::StatusOr<Json> queue = absl::UnavailableError("not collected");
  double seconds = 0;
  SteadyClock::time_point at;
  std::string state_warning;  // DashboardSource::state_warning
};

class Cache {
 public:
  explicit Cache(DashboardSource source) : source_(std::move(source)) {
    if (source_.remote_hosts) {
      remote_ = std::make_unique<HostsCache>(source_.remote_hosts, kHostsMaxAge);
    }
  }

  // Every host's overview line, this one first.
  Json Hosts() {
    Snapshot s = Live();
    Json local{{"host", source_.host_name}, {"local", true}};
    if (!s.status.ok()) {
      local["error"] = std::string(s.status.status().message());
    } else if (!s.queue.ok()) {
      local["error"] = std::string(s.queue.status().message());
    } else if (source_.summary) {
      local["summary"] = source_.summary(*s.status, *s.queue);
    }
    Json hosts = Json::array({local});
    if (remote_) {
      for (const Json& line : remote_->Get()) {
        Json remote = line;
        remote["local"] = false;
        hosts.push_back(std::move(remote));
      }
    }
    return hosts;
  }

  Snapshot Live() {
    MutexLock lock(mu_);
    SteadyClock::time_point now = SteadyClock::now();
    if (live_.at == SteadyClock::time_point() || now - live_.at >= kSnapshotTtl) {
      Snapshot fresh;
      fresh.status = source_.status();
      fresh.queue = source_.queue();
      if (source_.state_warning) fresh.state_warning = source_.state_warning();
      fresh.at = SteadyClock::now();
      fresh.seconds = std::chrono::duration<double>(fresh.at - now).count();
      live_ = std::move(fresh);
    }
    return live_;
  }

  absl::StatusOr<Json> Report(int days) {
    MutexLock lock(mu_);
    auto it = reports_.find(days);
    if (it == reports_.end() || SteadyClock::now() - it->second.second >= kReportTtl) {
      absl::StatusOr<Json> report = source_.report(days);
      if (!report.ok()) return report.status();
      it = reports_.insert_or_assign(days, std::make_pair(*report, SteadyClock::now())).first;
    }
    return it->second.first;
  }

  const std::string& host_name() const { return source_.host_name; }
  bool demo() const { return source_.demo; }

 private:
  DashboardSource source_;
  Mutex mu_;
  Snapshot live_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::pair<Json, SteadyClock::time_point>> reports_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HostsCache> remote_;  // set when there are remote hosts
};

void SendJson(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_header("Cache-Control", "no-store");
  res.set_content(DumpJson(body), "application/json");
}

void SendError(httplib::Response& res, int code, const std::string& message) {
  SendJson(res, code, Json{{"error", message}});
}

std::string ContentType(std::string_view path) {
  if (path.ends_with(".html")) return "text/html; charset=utf-8";
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

void Routes(httplib::Server& server, Cache& cache) {
  for (const Asset& asset : Assets()) {
    std::string path(asset.path);
    auto serve = [asset](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(asset.content), ContentType(asset.path).c_str());
    };
    server.Get(path, serve);
    if (path == "/index.html") server.Get("/", serve);
  }
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/api/status", [&cache](const httplib::Request&, httplib::Response& res) {
    Snapshot s = cache.Live();
    if (!s.status.ok()) return SendError(res, 503, std::string(s.status.status().message()));
    Json body{{"host", cache.host_name()}, {"gpus", *s.status}};
    if (!s.state_warning.empty()) body["state_warning"] = s.state_warning;
    if (cache.demo()) body["demo"] = true;
    SendJson(res, 200, body);
  });
  server.Get("/api/queue", [&cache](const httplib::Request&, httplib::Response& res) {
    Snapshot s = cache.Live();
    if (!s.queue.ok()) return SendError(res, 503, std::string(s.queue.status().message()));
    SendJson(res, 200, *s.queue);
  });
  server.Get("/api/hosts", [&cache](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, Json{{"hosts", cache.Hosts()}});
  });
  server.Get("/api/report", [&cache](const httplib::Request& req, httplib::Response& res) {
    int days = 30;
    if (req.has_param("days")) {
      std::string text = req.get_param_value("days");
      if (!ParseInt(text, &days) || days < 1 || days > kMaxDays) {
        return SendError(res, 400, StrCat("days must be a whole number from 1 to ", kMaxDays));
      }
    }
    absl::StatusOr<Json> report = cache.Report(days);
    if (!report.ok()) return SendError(res, 503, std::string(report.status().message()));
    SendJson(res, 200, *report);
  });
  server.Get("/metrics", [&cache](const httplib::Request&, httplib::Response& res) {
    Snapshot s = cache.Live();
    if (!s.status.ok() || !s.queue.ok()) {
      res.status = 503;
      res.set_content("# state unavailable\n", "text/plain");
      return;
    }
    res.set_content(MetricsText(*s.status, *s.queue, s.seconds),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(DumpJson(Json{{"error", StrCat("HTTP ", res.status)}}), "application/json");
    }
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content(R"({"error":"internal error"})", "application/json");
      });
}

}  // namespace

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

absl::Status ServeDashboard(const ServeOptions& options, DashboardSource source) {
  ASSIGN_OR_RETURN(const int listen_fd, httpfront::ListenTcp(options.host, options.port));
  const int port = httpfront::BoundPort(listen_fd);
  Cache cache(std::move(source));
  std::vector<std::string> names = options.allowed_hosts;
  names.push_back(options.host);
  names.push_back(cache.host_name());
  const HostAllowlist hosts(names);
  httpfront::HttplibExchange server;
  server.set_payload_max_length(kMaxBody);
  // Only for the Keep-Alive header httplib writes: the front closes an idle
  // connection at the request deadline, and does not count requests.
  server.set_keep_alive_timeout(10);
  server.set_keep_alive_max_count(1000);
  server.set_default_headers({
      {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  });
  server.set_pre_routing_handler([&hosts](const httplib::Request& req, httplib::Response& res) {
    if (hosts.Allows(req.get_header_value("Host")))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 403;
    res.set_content(
        "forbidden: this dashboard does not answer to that host name (canhazgpu web "
        "--allowed-hosts NAME adds one)\n",
        "text/plain; charset=utf-8");
    return httplib::Server::HandlerResponse::Handled;
  });
  Routes(server, cache);
  httpfront::FrontLimits limits{.loops = options.threads,
                                .max_client_connections = options.max_client_connections,
                                .max_body_bytes = kMaxBody};
  httpfront::HttpFront front(listen_fd, limits,
                             [&server](const httpfront::Exchange& ex) { return server.Serve(ex); });
  // SIGINT/SIGTERM are blocked by the caller; this thread takes them and
  // stops the front, which refuses new connections at once and closes the
  // open ones, however many and however slow.
  std::atomic<bool> ended{false};
  std::thread stopper([&] {
    const sigset_t set = StopSignals();
    int sig = 0;
    sigwait(&set, &sig);
    if (!ended) front.Stop();
  });
  if (options.on_listening) options.on_listening(port);
  absl::Status served = front.Run();
  ended = true;
  // Run ended by itself (it could not start): wake the stopper. Otherwise
  // the stopper has already taken its signal and returned.
  if (!served.ok()) kill(getpid(), SIGTERM);
  stopper.join();
  return served;
}

}  // namespace canhazgpu::web
