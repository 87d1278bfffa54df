// canhazgpu-web: `canhazgpu web`, the dashboard server (see web_command.cc
// for why it is a binary of its own).
#include <signal.h>

#include <cstdio>
#include <memory>

#include "alloc/queue.h"
#include "alloc/report.h"
#include "cli/canhazgpu/commands.h"
#include "cli/canhazgpu/entry.h"
#include "cli/canhazgpu/remote_status.h"
#include "cli/canhazgpu/report_view.h"
#include "cli/canhazgpu/status_view.h"
#include "cli/canhazgpu/web_demo.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/self_executable.h"
#include "web/dashboard_server.h"

namespace canhazgpu::cli {
namespace {

// --host, --port, --allowed-hosts and --max-client-connections.
absl::StatusOr<web::ServeOptions> WebServeOptions(const ParsedFlags& flags) {
  int port = 0;
  if (!ParseInt(*flags.Value("port"), &port) || port > 65535) {
    return absl::InvalidArgumentError(
        StrCat("invalid value '", *flags.Value("port"), "' for --port: expected 0 to 65535"));
  }
  web::ServeOptions options{.host = *flags.Value("host"), .port = port};
  if (const auto names = flags.Value("allowed-hosts")) {
    for (std::string_view name : Split(*names, ',', /*skip_empty=*/true)) {
      options.allowed_hosts.emplace_back(Trim(name));
    }
  }
  int per_client = 0;
  if (!ParseInt(*flags.Value("max-client-connections"), &per_client) || per_client > 1'000'000) {
    return absl::InvalidArgumentError(
        StrCat("invalid value '", *flags.Value("max-client-connections"),
               "' for --max-client-connections: expected 1 to 1000000"));
  }
  options.max_client_connections = per_client;
  return options;
}

// The dashboard has no login: say so when more than this machine can reach it.
void WarnIfPublic(const std::string& host) {
  if (!web::IsLoopback(host)) {
    std::fprintf(stderr,
                 "canhazgpu: warning: listening on %s: anyone who can reach this address sees "
                 "who uses which GPU (there is no login)\n",
                 host.c_str());
  }
}

absl::Status Serve(Context& ctx, const ParsedFlags& flags) {
  if (!flags.positional.empty()) {
    return absl::InvalidArgumentError(
        StrCat("unexpected argument '", flags.positional[0], "' for 'web'"));
  }
  ASSIGN_OR_RETURN(web::ServeOptions options, WebServeOptions(flags));
  const std::string host = options.host;
  // One store for the server's life: the dashboard calls the sources one at
  // a time (dashboard_server.h), and the state must be readable before we
  // say we are listening. The demo's is its own, in a directory of its own,
  // with its own simulated processes; it goes when Serve returns.
  const bool demo = flags.Has("demo");
  std::unique_ptr<DemoHost> demo_host;
  std::shared_ptr<store::StateStore> store;
  if (demo) {
    ASSIGN_OR_RETURN(demo_host, DemoHost::Create(ctx.machine->clock, ctx.open_store));
    ctx.machine = &demo_host->machine();
    store = demo_host->store();
  } else {
    ASSIGN_OR_RETURN(store, ctx.open_store(ctx.state_path, false));
  }
  RETURN_IF_ERROR(alloc::ReadPool(*store).status());
  web::DashboardSource source{.host_name = host::HostName(), .demo = demo};
  source.summary = [](const web::Json& status, const web::Json& queue) {
    return SummaryJson(status, queue.value("total_waiting", size_t{0}));
  };
  if (demo) {
    source.remote_hosts = DemoHost::RemoteHosts;
  } else if (!ctx.remote_hosts.empty()) {
    for (const std::string& h : ctx.remote_hosts) RETURN_IF_ERROR(CheckHostName(h));
    // Asked as `status --all --summary` asks them; the flags are copied, as
    // the hosts are asked from a thread of the server's.
    source.remote_hosts = [hosts = ctx.remote_hosts, flags] {
      web::Json lines = web::Json::array();
      for (const HostReport& r : RemoteReports(hosts, flags, /*summary=*/true)) {
        lines.push_back(r.error.empty() ? web::Json{{"host", r.host}, {"summary", r.value}}
                                        : web::Json{{"host", r.host}, {"error", r.error}});
      }
      return lines;
    };
  }
  // Why the state file could not be written, as the last collection found.
  auto warning = std::make_shared<std::string>();
  source.status = [&ctx, store, warning]() -> absl::StatusOr<web::Json> {
    ASSIGN_OR_RETURN(PoolConfig pool, alloc::ReadPool(*store));
    ASSIGN_OR_RETURN(
        alloc::HostStatus status,
        alloc::CollectStatus(*store, QueryGpus(ctx, pool), ctx.threshold_bytes, *ctx.machine));
    *warning = status.write_error;
    WarnReadOnlyView(status.write_error);
    return StatusJson(status, ctx.machine->clock.Now());
  };
  source.queue = [&ctx, store]() -> absl::StatusOr<web::Json> {
    std::string write_error;
    ASSIGN_OR_RETURN(std::vector<alloc::QueueRow> rows,
                     alloc::CollectQueue(*store, *ctx.machine, &write_error));
    WarnReadOnlyView(write_error);
    return QueueJson(rows, ctx.machine->clock.Now());
  };
  source.state_warning = [warning] { return *warning; };
  source.report = [&ctx, store](int days) -> absl::StatusOr<web::Json> {
    ASSIGN_OR_RETURN(alloc::UsageReport report,
                     alloc::CollectReport(*store, days, ctx.machine->clock.Now()));
    return ReportJson(report, days);
  };
  // Blocked before anything is printed: whoever saw a line from us may stop
  // us, and the server's own thread takes the signal.
  const sigset_t stop = web::StopSignals();
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  WarnIfPublic(host);
  options.on_listening = [&host, demo](int bound) {
    std::string shown = host.find(':') != std::string::npos ? StrCat("[", host, "]") : host;
    std::printf("canhazgpu dashboard%s on http://%s:%d/ (Ctrl-C to stop)\n",
                demo ? " (demo: simulated data)" : "", shown.c_str(), bound);
    std::fflush(stdout);
  };
  return web::ServeDashboard(options, std::move(source));
}

int ServeCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, WebFlags(), "web", Serve);
}

}  // namespace
}  // namespace canhazgpu::cli

int main(int argc, char** argv) {
  canhazgpu::cli::SetWebServer(canhazgpu::cli::ServeCommand);
  return canhazgpu::cli::Main(argc, argv);
}
