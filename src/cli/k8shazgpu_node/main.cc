// k8shazgpu-node: the DRA driver for a node's GPUs (docs/cluster.md). Every
// flag can also come from the environment as K8SHAZGPU_<FLAG> (the
// DaemonSet's way); the command line wins. This file only builds the real
// parts and hands them to daemon::NodeDaemon.
#include <malloc.h>
#include <signal.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "cacheagent/cache_agent.h"
#include "cacheagent/disk_budget.h"
#include "cli/common/exit_code.h"
#include "cli/common/flags.h"
#include "cli/common/listen_address.h"
#include "cli/common/stop_signals.h"
#include "core/duration.h"
#include "core/quantity.h"
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
#include "host/mig_minors.h"
#include "httpfront/http_front.h"
#include "httpfront/httplib_exchange.h"
#include "kube/kubeconfig.h"
#include "store/reopening_state_store.h"
#include "store/sqlite_state_store.h"

namespace canhazgpu {
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

std::vector<cli::FlagSpec> Flags() {
  auto text = [](std::string name, std::string value, std::string help, std::string fallback) {
    return cli::FlagSpec{.name = std::move(name),
                         .has_value = true,
                         .value_name = std::move(value),
                         .help = std::move(help),
                         .default_value = std::move(fallback)};
  };
  return {
      text("node-name", "NAME", "this node's name (required; the downward API's spec.nodeName)",
           ""),
      text("kubeconfig", "FILE", "kubeconfig to use; default: in-cluster, then kubectl's rules",
           ""),
      text("state", "FILE", "the host store canhazgpu uses", "/var/lib/canhazgpu/state.db"),
      text("provider", "nvidia|amd|fake", "where the GPUs come from", "nvidia"),
      text("fake-host", "FILE", "simulated host file, for --provider fake", ""),
      text("nvml-library", "PATH", "libnvidia-ml.so to load", gpu::kDefaultNvmlLibrary),
      text("plugin-dir", "DIR", "the kubelet plugin directory (dra.sock, checkpoint)",
           "/var/lib/kubelet/plugins/gpu.canhazgpu.dev"),
      text("registrar-dir", "DIR", "the kubelet's plugin registry",
           "/var/lib/kubelet/plugins_registry"),
      text("cdi-dir", "DIR", "where CDI specs are written", "/var/run/cdi"),
      text("driver-root", "DIR", "the host's root as mounted here (driver libraries)", "/"),
      text("mig-minors", "FILE", "the NVIDIA driver's MIG capability minors", host::kMigMinorsPath),
      text("http-listen", "HOST:PORT", "/healthz, /readyz and /metrics", "127.0.0.1:8081"),
      text("log-format", "text|json", "how log lines look", "text"),
      // The kubelet's are 50 and 100; ours asks far less (claims and pods
      // come from watches), but a burst of prepares must not wait on it.
      text("kube-api-qps", "N", "requests a second to the API server, at most, on average", "20"),
      text("kube-api-burst", "N", "requests to the API server at once above --kube-api-qps", "50"),
      text("resync", "DURATION",
           "how often the slices and the NodeGpuStatus are checked against the API server even "
           "without a change",
           "30s"),
      text("cache", "on|off",
           "keep the node's caches (CachePlans) warm (the DaemonSet turns it on)", "off"),
      text("cache-root", "DIR", "where the git mirrors and the model cache live (pods mount it)",
           "/var/lib/canhazgpu/cache"),
      text("cache-disk-limit", "QUANTITY|N%",
           "most bytes the git and model caches may hold: a quantity such as 500Gi, a share of "
           "the cache's file system such as 40%, or 0 for no ceiling",
           "40%"),
      text("cache-pull-deadline", "DURATION",
           "a pull still running after this long is stopped and retried later", "6h"),
      text("cache-workers", "N", "how many cache items are pulled at once", "2"),
      text("container-runtime-endpoint", "PATH",
           "the CRI socket images are pulled through; default: the first of the usual ones", ""),
      text("hf-endpoint", "URL", "the Hugging Face Hub or a mirror of it",
           "https://huggingface.co"),
      text("cache-secret-namespaces", "NS[,NS...]",
           "the only namespaces whose Secrets plan items may name (pullSecretRef); a Secret is "
           "used only for the hosts in its canhazgpu.dev/credential-hosts annotation",
           cacheagent::kDefaultSecretNamespace),
      text("cache-local-git", "on|off",
           "accept file:// repositories in plans; tests and simulated clusters only (the agent "
           "is root, and every pod reads the cache)",
           "off"),
      text("cache-http-credentials", "on|off",
           "send pull-secret credentials over plain http to loopback hosts; test servers only",
           "off"),
      {.name = "help", .short_name = 'h', .help = "show this help"},
  };
}

// The flag's value: command line, else K8SHAZGPU_<FLAG>, else its default.
std::string Setting(const cli::ParsedFlags& flags, const cli::FlagSpec& spec) {
  if (auto v = flags.Value(spec.name)) return *v;
  std::string env = "K8SHAZGPU_" + absl::AsciiStrToUpper(spec.name);
  std::replace(env.begin(), env.end(), '-', '_');
  if (const char* v = std::getenv(env.c_str()); v != nullptr && *v != '\0') return v;
  return spec.default_value;
}

class Logger {
 public:
  explicit Logger(bool json) : json_(json) {}
  void operator()(const std::string& raw) {
    // Lines carry what others chose (claim names from the kubelet's
    // requests, messages from the API server): one line each, whatever they
    // hold, so none can forge a line of its own or hide from a reader; and
    // valid UTF-8, which the JSON format needs.
    const std::string line = EscapeForDisplay(raw);
    std::lock_guard lock(mu_);
    if (json_) {
      std::cerr << nlohmann::json{{"time", FormatTimestamp(clock_.Now())}, {"msg", line}}.dump()
                << "\n";
    } else {
      std::cerr << "k8shazgpu-node: " << line << "\n";
    }
  }

 private:
  const bool json_;
  const Clock& clock_ = RealClock();
  std::mutex mu_;
};

absl::StatusOr<std::unique_ptr<gpu::GpuProvider>> MakeProvider(const std::string& name,
                                                               const std::string& fake_host,
                                                               const std::string& nvml) {
  if (name == "fake") return std::make_unique<gpu::FakeGpuProvider>(fake_host);
  if (name == "amd") return std::make_unique<gpu::AmdGpuProvider>("/");
  if (name == "nvidia") {
    ASSIGN_OR_RETURN(std::unique_ptr<gpu::NvmlGpuProvider> p, gpu::NvmlGpuProvider::Create(nvml));
    return std::unique_ptr<gpu::GpuProvider>(std::move(p));
  }
  return absl::InvalidArgumentError(
      StrCat("--provider: expected nvidia, amd or fake, got '", name, "'"));
}

// Test-only: K8SHAZGPU_TEST_CRASH_BEFORE_PREPARE_COMPLETED=1 kills the
// daemon (SIGKILL, as the OOM killer or a node's kubelet would) between the
// two checkpoint phases of every prepare — after PrepareStarted, the K8S
// reservation and the CDI spec, before PrepareCompleted — so the end-to-end
// tests can check what a restart makes of it. Never set it on a node.
std::function<void()> CrashHookForTests() {
  const char* crash = std::getenv("K8SHAZGPU_TEST_CRASH_BEFORE_PREPARE_COMPLETED");
  if (crash == nullptr || std::string(crash) != "1") return nullptr;
  return [] { raise(SIGKILL); };
}

int Fail(const std::string& message, int code = 1) {
  std::cerr << "k8shazgpu-node: " << message << "\n";
  return code;
}

int Main(const std::vector<std::string>& args) {
  const std::vector<cli::FlagSpec> specs = Flags();
  absl::StatusOr<cli::ParsedFlags> flags = cli::ParseFlags(args, specs, "");
  if (!flags.ok()) return Fail(std::string(flags.status().message()), cli::kExitUsage);
  if (flags->Has("help")) {
    std::cout << "usage: k8shazgpu-node --node-name NAME [flags]\n" << cli::FlagHelp(specs);
    return 0;
  }
  std::map<std::string, std::string> s;
  for (const cli::FlagSpec& spec : specs) s[spec.name] = Setting(*flags, spec);
  if (s["node-name"].empty()) {
    return Fail("--node-name (or K8SHAZGPU_NODE_NAME) is required", cli::kExitUsage);
  }
  if (s["log-format"] != "text" && s["log-format"] != "json") {
    return Fail("--log-format: expected text or json, got '" + s["log-format"] + "'",
                cli::kExitUsage);
  }
  absl::StatusOr<Duration> resync = ParseDuration(s["resync"]);
  if (!resync.ok())
    return Fail("--resync: " + std::string(resync.status().message()), cli::kExitUsage);
  absl::StatusOr<cli::ListenAddress> http_listen = cli::ParseListenAddress(s["http-listen"]);
  if (!http_listen.ok()) {
    return Fail("--http-listen: " + std::string(http_listen.status().message()), cli::kExitUsage);
  }

  for (const char* on_off : {"cache", "cache-local-git", "cache-http-credentials"}) {
    if (s[on_off] != "on" && s[on_off] != "off") {
      return Fail(StrCat("--", on_off, ": expected on or off, got '", s[on_off], "'"),
                  cli::kExitUsage);
    }
  }
  std::vector<std::string> secret_namespaces;
  for (std::string_view ns : Split(s["cache-secret-namespaces"], ',', /*skip_empty=*/true)) {
    secret_namespaces.emplace_back(Trim(ns));
  }
  std::optional<int64_t> disk_limit_bytes;
  if (const std::string& limit = s["cache-disk-limit"]; limit.ends_with('%')) {
    int percent = 0;
    if (absl::SimpleAtoi(limit.substr(0, limit.size() - 1), &percent)) {
      absl::StatusOr<int64_t> share = cacheagent::FileSystemShare(s["cache-root"], percent);
      if (!share.ok()) {
        return Fail("--cache-disk-limit: " + std::string(share.status().message()),
                    cli::kExitUsage);
      }
      disk_limit_bytes = *share;
    }
  } else if (absl::StatusOr<Quantity> quantity = Quantity::Parse(limit); quantity.ok()) {
    disk_limit_bytes = quantity->AsInt64();
  }
  if (!disk_limit_bytes || *disk_limit_bytes < 0) {
    return Fail(
        "--cache-disk-limit: expected a byte count such as 500Gi, a share such as 40% "
        "or 0, got '" +
            s["cache-disk-limit"] + "'",
        cli::kExitUsage);
  }
  absl::StatusOr<Duration> pull_deadline = ParseDuration(s["cache-pull-deadline"]);
  if (!pull_deadline.ok()) {
    return Fail("--cache-pull-deadline: " + std::string(pull_deadline.status().message()),
                cli::kExitUsage);
  }
  double api_qps = 0;
  if (!absl::SimpleAtod(s["kube-api-qps"], &api_qps) || !(api_qps > 0) || api_qps > 10000) {
    return Fail(
        "--kube-api-qps: expected a number above 0 up to 10000, got '" + s["kube-api-qps"] + "'",
        cli::kExitUsage);
  }
  int api_burst = 0;
  if (!absl::SimpleAtoi(s["kube-api-burst"], &api_burst) || api_burst < 1 || api_burst > 100000) {
    return Fail("--kube-api-burst: expected 1 to 100000, got '" + s["kube-api-burst"] + "'",
                cli::kExitUsage);
  }
  const kube::ClientOptions client_options{
      .user_agent = kube::UserAgent("k8shazgpu-node"), .qps = api_qps, .burst = api_burst};
  int cache_workers = 0;
  if (!absl::SimpleAtoi(s["cache-workers"], &cache_workers) || cache_workers < 1 ||
      cache_workers > 64) {
    return Fail("--cache-workers: expected 1 to 64, got '" + s["cache-workers"] + "'",
                cli::kExitUsage);
  }

  sigset_t signals = cli::BlockStopSignals();  // before any thread starts

  Logger logger(s["log-format"] == "json");
  auto log = [&logger](const std::string& line) { logger(line); };
  absl::StatusOr<kube::RestConfig> config =
      kube::LoadRestConfig(kube::LoadOptions::FromProcess(s["kubeconfig"], ""));
  if (!config.ok()) return Fail(std::string(config.status().message()));
  absl::StatusOr<std::unique_ptr<kube::Client>> client =
      kube::Client::Create(*config, client_options);
  if (!client.ok()) return Fail(std::string(client.status().message()));
  if (absl::Status s_api = (*client)->CheckDraApi(); !s_api.ok()) {
    return Fail(std::string(s_api.message()));
  }
  // The slice loop and the kubelet's calls use the store from different
  // threads; and the file may be deleted and made again under the daemon.
  absl::StatusOr<std::unique_ptr<store::ReopeningStateStore>> opened =
      store::ReopeningStateStore::Open(
          s["state"],
          [](const std::string& path) -> absl::StatusOr<std::unique_ptr<store::StateStore>> {
            return store::SqliteStateStore::Open(path);
          },
          log);
  if (!opened.ok()) return Fail(std::string(opened.status().message()));
  store::ReopeningStateStore& store = **opened;
  absl::StatusOr<std::unique_ptr<gpu::GpuProvider>> provider =
      MakeProvider(s["provider"], s["fake-host"], s["nvml-library"]);
  if (!provider.ok()) return Fail(std::string(provider.status().message()));
  const Clock& clock = RealClock();
  std::unique_ptr<gpu::NvmlHealthMonitor> health;
  if (s["provider"] == "nvidia") {
    absl::StatusOr<std::unique_ptr<gpu::NvmlHealthMonitor>> monitor =
        gpu::NvmlHealthMonitor::Create(s["nvml-library"], clock);
    if (monitor.ok()) {
      health = *std::move(monitor);
      health->Start();
    } else {
      log(StrCat("GPU health is not watched: ", monitor.status().message()));
    }
  }
  absl::StatusOr<std::string> boot_id = host::ReadBootId();
  if (!boot_id.ok()) return Fail(std::string(boot_id.status().message()));
  host::LinuxProcessTable processes;

  absl::StatusOr<std::unique_ptr<daemon::NodeDaemon>> node = daemon::NodeDaemon::Start(
      {.state_path = s["state"],
       .plugin_dir = s["plugin-dir"],
       .registrar_dir = s["registrar-dir"],
       .cdi_dir = s["cdi-dir"],
       .driver_root = s["driver-root"],
       .mig_minors_path = s["mig-minors"],
       .boot_id = *boot_id,
       .resync = std::chrono::duration_cast<std::chrono::milliseconds>(*resync),
       .before_prepare_completed = CrashHookForTests(),
       .log = log},
      {.node_name = s["node-name"],
       .provider = **provider,
       .store = store,
       .processes = processes,
       .health = health.get(),
       .threshold_bytes = 1024 * kMiB},
      **client, clock);
  if (!node.ok()) return Fail(std::string(node.status().message()));

  // The cache agent has a client of its own, so that its writes never
  // wait behind the slice loop's share of the rate limit, nor the reverse.
  std::unique_ptr<kube::Client> cache_client;
  std::unique_ptr<cacheagent::CacheAgent> cache;
  if (s["cache"] == "on") {
    std::string socket;
    if (absl::StatusOr<cri::RuntimeSocket> found =
            cri::FindRuntimeSocket(s["container-runtime-endpoint"]);
        found.ok()) {
      socket = found->path;
      log(StrCat("cache: container runtime ", found->reason));
    } else {
      log(StrCat("cache: images will not be cached: ", found.status().message()));
    }
    absl::StatusOr<std::unique_ptr<kube::Client>> created =
        kube::Client::Create(*config, client_options);
    if (!created.ok()) return Fail(std::string(created.status().message()));
    cache_client = *std::move(created);
    absl::StatusOr<std::unique_ptr<cacheagent::CacheAgent>> started = cacheagent::CacheAgent::Start(
        {.node_name = s["node-name"],
         .cache_root = s["cache-root"],
         .disk_limit_bytes = *disk_limit_bytes,
         .workers = cache_workers,
         .cri_socket = socket,
         .hf_endpoint = s["hf-endpoint"],
         .credentials = {.secret_namespaces = secret_namespaces,
                         .allow_plain_http_to_loopback = s["cache-http-credentials"] == "on"},
         .allow_local_git = s["cache-local-git"] == "on",
         .pull_deadline = *pull_deadline,
         .log = log},
        *cache_client, clock);
    if (!started.ok()) return Fail(std::string(started.status().message()));
    cache = *std::move(started);
    log(StrCat("cache: ceiling ",
               *disk_limit_bytes == 0 ? std::string("none")
                                      : StrCat(*disk_limit_bytes, " bytes (--cache-disk-limit ",
                                               s["cache-disk-limit"], ")"),
               ", pull deadline ", FormatDurationShort(*pull_deadline)));
  }

  // /healthz, /readyz and /metrics through the same front as the dashboard
  // (docs/cluster.md, "Probes that slow clients cannot starve"): its loops
  // read each request whole before a handler runs, so a slow client holds
  // no thread, and these handlers only read a flag and render the metrics,
  // so the loops answer the kubelet themselves. A client (an address; a uid
  // over loopback) holds at most kHttpClientConnections; when all are
  // taken, one holding at least two fewer takes one of the biggest holder's,
  // so the kubelet (one or two connections) gets in unless hundreds of
  // clients flood at once.
  httpfront::HttplibExchange http;
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http.Get("/readyz", [&](const httplib::Request&, httplib::Response& res) {
    const bool ready = (*node)->Ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "not ready: the slices are not published yet\n", "text/plain");
  });
  http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content((*node)->Metrics() + (cache ? cache->Metrics() : std::string()),
                    "text/plain; version=0.0.4");
  });
  absl::StatusOr<int> listening = httpfront::ListenTcp(http_listen->host, http_listen->port);
  if (!listening.ok()) return Fail(StrCat("--http-listen: ", listening.status().message()));
  const int bound = httpfront::BoundPort(*listening);
  httpfront::HttpFront front(*listening, kHttpLimits,
                             [&http](const httpfront::Exchange& ex) { return http.Serve(ex); });
  std::thread serving([&] {
    if (absl::Status served = front.Run(); !served.ok()) log(StrCat("http: ", served.message()));
  });
  log(StrCat("serving node ", s["node-name"], "; health and metrics on ", http_listen->host, ":",
             bound));

  int sig = 0;
  sigwait(&signals, &sig);
  log("stopping");
  if (cache) cache->Stop();
  (*node)->Stop();
  if (health) health->Stop();
  front.Stop();
  serving.join();
  return 0;
}

}  // namespace
}  // namespace canhazgpu

int main(int argc, char** argv) {
  // glibc gives each thread that allocates its own arena (up to 8 per core),
  // each holding freed memory; the daemon's threads allocate little and
  // rarely at once, so two arenas keep its idle memory small.
  mallopt(M_ARENA_MAX, 2);
  return canhazgpu::Main(std::vector<std::string>(argv + 1, argv + argc));
}
