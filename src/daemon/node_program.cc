#include "daemon/node_program.h"

#include <thread>

#include "cacheagent/cache_agent.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "cri/runtime_socket.h"
#include "daemon/node_daemon.h"
#include "gpu/amd_gpu_provider.h"
#include "gpu/fake_host.h"
#include "gpu/nvml_gpu_provider.h"
#include "gpu/nvml_health_monitor.h"
#include "host/boot_id.h"
#include "host/linux_process_table.h"
#include "httpfront/http_front.h"
#include "httpfront/httplib_exchange.h"
#include "kube/kubeconfig.h"
#include "store/reopening_state_store.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu::daemon {
namespace {

// Only GETs with no body; two loops are plenty for a probe every few
// seconds and a scrape a minute, and the kubelet sends its request at once.
constexpr int kHttpClientConnections = 8;
constexpr httpfront::FrontLimits kHttpLimits{.loops = 2,
                                             .max_client_connections = kHttpClientConnections,
                                             .max_connections = 512,
                                             .request_deadline = std::chrono::seconds(10),
                                             .write_deadline = std::chrono::seconds(10),
                                             .max_head_bytes = 8 * 1024,
                                             .max_body_bytes = 1024};

absl::StatusOr<std::unique_ptr<gpu::GpuProvider>> MakeProvider(const NodeProgramSettings& s) {
  if (s.provider == "fake") return std::make_unique<gpu::FakeGpuProvider>(s.fake_host);
  if (s.provider == "amd") return std::make_unique<gpu::AmdGpuProvider>("/");
  ASSIGN_OR_RETURN(std::unique_ptr<gpu::NvmlGpuProvider> p,
                   gpu::NvmlGpuProvider::Create(s.nvml_library));
  return std::unique_ptr<gpu::GpuProvider>(std::move(p));
}

}  // namespace

// Declared in the order they start; destroyed in reverse.
struct NodeProgram::Parts {
  NodeProgramSettings settings;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<store::ReopeningStateStore> store;
  std::unique_ptr<gpu::GpuProvider> provider;
  std::unique_ptr<gpu::NvmlHealthMonitor> health;
  host::LinuxProcessTable processes;
  std::unique_ptr<NodeDaemon> node;
  // The cache agent has a client of its own, so that its writes never wait
  // behind the slice loop's share of the rate limit, nor the reverse.
  std::unique_ptr<kube::Client> cache_client;
  std::unique_ptr<cacheagent::CacheAgent> cache;
  httpfront::HttplibExchange http;
  std::unique_ptr<httpfront::HttpFront> front;
  std::thread serving;
  int http_port = 0;
  bool stopped = false;

  absl::Status StartClients(const kube::RestConfig& config);
  absl::Status StartGpus();
  absl::Status StartCache();
  absl::Status StartHttp();
};

absl::Status NodeProgram::Parts::StartClients(const kube::RestConfig& config) {
  const kube::ClientOptions options{.user_agent = kube::UserAgent("k8shazgpu-node"),
                                    .qps = settings.api_qps,
                                    .burst = settings.api_burst};
  ASSIGN_OR_RETURN(client, kube::Client::Create(config, options));
  RETURN_IF_ERROR(client->CheckDraApi());
  if (settings.cache.enabled) {
    ASSIGN_OR_RETURN(cache_client, kube::Client::Create(config, options));
  }
  return absl::OkStatus();
}

absl::Status NodeProgram::Parts::StartGpus() {
  // The slice loop and the kubelet's calls use the store from different
  // threads; and the file may be deleted and made again under the daemon.
  auto open_sqlite =
      [](const std::string& path) -> absl::StatusOr<std::unique_ptr<store::StateStore>> {
    return store::SqliteStateStore::Open(path);
  };
  ASSIGN_OR_RETURN(
      store, store::ReopeningStateStore::Open(settings.state_path, open_sqlite, settings.log));
  ASSIGN_OR_RETURN(provider, MakeProvider(settings));
  if (settings.provider == "nvidia") {
    absl::StatusOr<std::unique_ptr<gpu::NvmlHealthMonitor>> monitor =
        gpu::NvmlHealthMonitor::Create(settings.nvml_library, RealClock());
    if (monitor.ok()) {
      health = *std::move(monitor);
      health->Start();
    } else {
      settings.log.Warning(StrCat("GPU health is not watched: ", monitor.status().message()));
    }
  }
  ASSIGN_OR_RETURN(std::string boot_id, host::ReadBootId());
  NodeDaemonOptions options{.state_path = settings.state_path,
                            .plugin_dir = settings.plugin_dir,
                            .registrar_dir = settings.registrar_dir,
                            .cdi_dir = settings.cdi_dir,
                            .driver_root = settings.driver_root,
                            .mig_minors_path = settings.mig_minors_path,
                            .boot_id = boot_id,
                            .resync = settings.resync,
                            .before_prepare_completed = settings.before_prepare_completed,
                            .log = settings.log};
  driver::NodeParts node_parts{.node_name = settings.node_name,
                               .provider = *provider,
                               .store = *store,
                               .processes = processes,
                               .health = health.get(),
                               .threshold_bytes = 1024 * kMiB,
                               .sharing = settings.sharing};
  absl::StatusOr<std::unique_ptr<NodeDaemon>> started =
      NodeDaemon::Start(std::move(options), std::move(node_parts), *client, RealClock());
  if (!started.ok()) return started.status();
  node = *std::move(started);
  return absl::OkStatus();
}

absl::Status NodeProgram::Parts::StartCache() {
  const NodeCacheSettings& c = settings.cache;
  if (!c.enabled) return absl::OkStatus();
  std::string socket;
  if (absl::StatusOr<cri::RuntimeSocket> found = cri::FindRuntimeSocket(c.runtime_endpoint);
      found.ok()) {
    socket = found->path;
    settings.log.Info(StrCat("cache: container runtime ", found->reason));
  } else {
    settings.log.Warning(StrCat("cache: images will not be cached: ", found.status().message()));
  }
  cacheagent::CacheAgentOptions options{
      .node_name = settings.node_name,
      .cache_root = c.root,
      .disk_limit_bytes = c.disk_limit_bytes,
      .workers = c.workers,
      .cri_socket = socket,
      .hf_endpoint = c.hf_endpoint,
      .credentials = {.secret_namespaces = c.secret_namespaces,
                      .allow_plain_http_to_loopback = c.allow_plain_http_to_loopback},
      .allow_local_git = c.allow_local_git,
      .pull_deadline = c.pull_deadline,
      .log = settings.log};
  absl::StatusOr<std::unique_ptr<cacheagent::CacheAgent>> started =
      cacheagent::CacheAgent::Start(std::move(options), *cache_client, RealClock());
  if (!started.ok()) return started.status();
  cache = *std::move(started);
  settings.log.Info(StrCat(
      "cache: ceiling ",
      c.disk_limit_bytes == 0
          ? std::string("none")
          : StrCat(c.disk_limit_bytes, " bytes (--cache-disk-limit ", c.disk_limit_text, ")"),
      ", pull deadline ", FormatDurationShort(c.pull_deadline)));
  return absl::OkStatus();
}

// /healthz, /readyz and /metrics through the same front as the dashboard
// (docs/cluster.md, "Probes that slow clients cannot starve"): its loops
// read each request whole before a handler runs, so a slow client holds no
// thread, and these handlers only read a flag and render the metrics, so
// the loops answer the kubelet themselves. A client (an address; a uid over
// loopback) holds at most kHttpClientConnections; when all are taken, one
// holding at least two fewer takes one of the biggest holder's, so the
// kubelet (one or two connections) gets in unless hundreds of clients flood
// at once.
absl::Status NodeProgram::Parts::StartHttp() {
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = node->Ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "not ready: the slices are not published yet\n", "text/plain");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(node->Metrics() + (cache ? cache->Metrics() : std::string()),
                    "text/plain; version=0.0.4");
  });
  absl::StatusOr<int> listening = httpfront::ListenTcp(settings.http_host, settings.http_port);
  if (!listening.ok()) {
    return absl::Status(listening.status().code(),
                        StrCat("--http-listen: ", listening.status().message()));
  }
  http_port = httpfront::BoundPort(*listening);
  front = std::make_unique<httpfront::HttpFront>(
      *listening, kHttpLimits, [this](const httpfront::Exchange& ex) { return http.Serve(ex); });
  serving = std::thread([this] {
    if (absl::Status served = front->Run(); !served.ok()) {
      settings.log.Error(StrCat("http: ", served.message()));
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NodeProgram>> NodeProgram::Start(NodeProgramSettings settings) {
  ASSIGN_OR_RETURN(kube::RestConfig config,
                   kube::LoadRestConfig(kube::LoadOptions::FromProcess(settings.kubeconfig, "")));
  auto parts = std::make_unique<Parts>();
  parts->settings = std::move(settings);
  std::unique_ptr<NodeProgram> program(new NodeProgram(std::move(parts)));
  Parts& p = *program->parts_;
  // A failure stops what had started (the destructor) before it returns.
  RETURN_IF_ERROR(p.StartClients(config));
  RETURN_IF_ERROR(p.StartGpus());
  RETURN_IF_ERROR(p.StartCache());
  RETURN_IF_ERROR(p.StartHttp());
  p.settings.log.Info(StrCat("serving node ", p.settings.node_name, "; health and metrics on ",
                             p.settings.http_host, ":", p.http_port));
  return program;
}

NodeProgram::NodeProgram(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

NodeProgram::~NodeProgram() { Stop(); }

void NodeProgram::Stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  if (p.cache) p.cache->Stop();
  if (p.node) p.node->Stop();
  if (p.health) p.health->Stop();
  if (p.front) p.front->Stop();
  if (p.serving.joinable()) p.serving.join();
}

int NodeProgram::http_port() const { return parts_->http_port; }

}  // namespace canhazgpu::daemon
