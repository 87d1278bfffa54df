#include "web/dashboard_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "core/strings.h"
#include "web/assets.h"
#include "web/metrics.h"

namespace canhazgpu::web {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kSnapshotTtl = std::chrono::seconds(1);
constexpr auto kReportTtl = std::chrono::seconds(30);
constexpr int kMaxDays = 3650;

// The status and queue as of at most kSnapshotTtl ago, and how long
// collecting them took.
struct Snapshot {
  absl::StatusOr<Json> status = absl::UnavailableError("not collected");
  absl::StatusOr<Json> queue = absl::UnavailableError("not collected");
  double seconds = 0;
  Clock::time_point at;
  std::string state_warning;  // DashboardSource::state_warning
};

class Cache {
 public:
  explicit Cache(DashboardSource source) : source_(std::move(source)) {}

  Snapshot Live() {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    if (live_.at == Clock::time_point() || now - live_.at >= kSnapshotTtl) {
      Snapshot fresh;
      fresh.status = source_.status();
      fresh.queue = source_.queue();
      if (source_.state_warning) fresh.state_warning = source_.state_warning();
      fresh.at = Clock::now();
      fresh.seconds = std::chrono::duration<double>(fresh.at - now).count();
      live_ = std::move(fresh);
    }
    return live_;
  }

  absl::StatusOr<Json> Report(int days) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reports_.find(days);
    if (it == reports_.end() || Clock::now() - it->second.second >= kReportTtl) {
      absl::StatusOr<Json> report = source_.report(days);
      if (!report.ok()) return report.status();
      it = reports_.insert_or_assign(days, std::make_pair(*report, Clock::now())).first;
    }
    return it->second.first;
  }

  const std::string& host_name() const { return source_.host_name; }

 private:
  DashboardSource source_;
  std::mutex mu_;
  Snapshot live_;
  std::map<int, std::pair<Json, Clock::time_point>> reports_;
};

void SendJson(httplib::Response& res, int code, const Json& body) {
  res.status = code;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(), "application/json");
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
    SendJson(res, 200, body);
  });
  server.Get("/api/queue", [&cache](const httplib::Request&, httplib::Response& res) {
    Snapshot s = cache.Live();
    if (!s.queue.ok()) return SendError(res, 503, std::string(s.queue.status().message()));
    SendJson(res, 200, *s.queue);
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
      res.set_content(Json{{"error", StrCat("HTTP ", res.status)}}.dump(), "application/json");
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
  Cache cache(std::move(source));
  httplib::Server server;
  const int threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Slow or silent clients are cut off instead of holding a thread.
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_timeout(2);
  server.set_payload_max_length(64 * 1024);
  server.set_default_headers({
      {"Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  });
  Routes(server, cache);
  // Debian's cpp-httplib listens with a backlog of 5, so a burst of
  // connections waits out SYN retries (seconds). Keep the socket httplib
  // makes and listen on it again with a real backlog once bound.
  int listen_fd = -1;
  // TCP_NODELAY too (accepted sockets inherit it): httplib writes headers
  // and body separately, and Nagle plus delayed ACKs then cost 40 ms per
  // keep-alive request.
  server.set_socket_options([&listen_fd](socket_t fd) {
    httplib::default_socket_options(fd);
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    listen_fd = fd;
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return absl::UnavailableError(StrCat("cannot listen on ", options.host, ":", options.port));
  }
  if (listen_fd >= 0) listen(listen_fd, SOMAXCONN);
  // SIGINT/SIGTERM are blocked by the caller; this thread takes them and
  // ends the accept loop by shutting the listening socket down, so
  // in-flight requests finish. Not httplib's stop(): it does nothing until
  // listen_after_bind() has started, so a signal that came just after the
  // "listening" line was lost and the server never ended. The socket is
  // reached through a dup() of our own, which stays valid (and is never
  // another file) even once httplib has closed its descriptor.
  const int wake_fd = listen_fd >= 0 ? dup(listen_fd) : -1;
  std::atomic<bool> stopped{false}, ended{false};
  std::thread stopper([&] {
    const sigset_t set = StopSignals();
    int sig = 0;
    sigwait(&set, &sig);
    if (ended) return;  // woken by the main thread below
    stopped = true;
    if (wake_fd >= 0) {
      shutdown(wake_fd, SHUT_RDWR);  // accept() fails and the loop ends
    } else {
      server.stop();
    }
  });
  if (options.on_listening) options.on_listening(port);
  const bool ok = server.listen_after_bind();
  ended = true;
  // listen ended by itself (an error): wake the stopper.
  if (!stopped) kill(getpid(), SIGTERM);
  stopper.join();
  if (wake_fd >= 0) close(wake_fd);
  // Our shutdown makes httplib report a failed accept: that is the stop.
  if (ok || stopped) return absl::OkStatus();
  return absl::InternalError("the web server stopped unexpectedly");
}

}  // namespace canhazgpu::web
