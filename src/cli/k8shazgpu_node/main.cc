// k8shazgpu-node: the DRA driver for a node's GPUs (docs/cluster.md). Every
// flag can also come from the environment as K8SHAZGPU_<FLAG> (the
// DaemonSet's way); the command line wins. This file only reads the flags
// into daemon::NodeProgramSettings and waits for a stop signal.
#include <malloc.h>
#include <signal.h>

#include <cstdlib>
#include <functional>
#include <iostream>

#include "absl/strings/numbers.h"
#include "cacheagent/cache_agent.h"
#include "cacheagent/disk_budget.h"
#include "cli/common/exit_code.h"
#include "cli/common/flags.h"
#include "cli/common/listen_address.h"
#include "cli/common/option_layers.h"
#include "cli/common/stop_signals.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/quantity.h"
#include "core/strings.h"
#include "daemon/log_lines.h"
#include "daemon/node_program.h"
#include "gpu/nvml_gpu_provider.h"
#include "host/mig_minors.h"

namespace canhazgpu {
namespace {

cli::FlagSpec Text(std::string name, std::string value, std::string help, std::string fallback,
                   cli::FlagKind kind = cli::FlagKind::kText) {
  return cli::FlagSpec{.name = std::move(name),
                       .has_value = true,
                       .value_name = std::move(value),
                       .help = std::move(help),
                       .kind = kind,
                       .default_value = std::move(fallback)};
}

cli::FlagSpec Choice(std::string name, std::vector<std::string> choices, std::string help,
                     std::string fallback) {
  cli::FlagSpec spec =
      Text(std::move(name), "", std::move(help), std::move(fallback), cli::FlagKind::kChoice);
  spec.value_name = Join(choices, "|");
  spec.choices = std::move(choices);
  return spec;
}

cli::FlagSpec Bounded(std::string name, std::string help, std::string fallback, int64_t max) {
  cli::FlagSpec spec =
      Text(std::move(name), "N", std::move(help), std::move(fallback), cli::FlagKind::kPositiveInt);
  spec.max = max;
  return spec;
}

std::vector<cli::FlagSpec> Flags() {
  using cli::FlagKind;
  return {
      Text("node-name", "NAME", "this node's name (required; the downward API's spec.nodeName)",
           ""),
      Text("kubeconfig", "FILE", "kubeconfig to use; default: in-cluster, then kubectl's rules",
           ""),
      Text("state", "FILE", "the host store canhazgpu uses", "/var/lib/canhazgpu/state.db"),
      Choice("provider", {"nvidia", "amd", "fake"}, "where the GPUs come from", "nvidia"),
      Text("fake-host", "FILE", "simulated host file, for --provider fake", ""),
      Text("nvml-library", "PATH", "libnvidia-ml.so to load", gpu::kDefaultNvmlLibrary),
      Text("plugin-dir", "DIR", "the kubelet plugin directory (dra.sock, checkpoint)",
           "/var/lib/kubelet/plugins/gpu.canhazgpu.dev"),
      Text("registrar-dir", "DIR", "the kubelet's plugin registry",
           "/var/lib/kubelet/plugins_registry"),
      Text("cdi-dir", "DIR", "where CDI specs are written", "/var/run/cdi"),
      Text("driver-root", "DIR", "the host's root as mounted here (driver libraries)", "/"),
      Choice("gpu-sharing", {"none", "memory"},
             "none: every GPU is allocated whole; memory: full GPUs are also shared by memory "
             "(consumable capacity, docs/sharing.md)",
             "none"),
      Text("gpu-reserved-memory", "QUANTITY",
           "memory of a shared GPU kept back for the driver's own use, never shared", "512Mi"),
      Text("cgroup-root", "DIR", "the cgroup v2 mount (memory isolation: the dmem controller)",
           "/sys/fs/cgroup"),
      Text("mig-minors", "FILE", "the NVIDIA driver's MIG capability minors", host::kMigMinorsPath),
      Text("http-listen", "HOST:PORT", "/healthz, /readyz and /metrics", "127.0.0.1:8081"),
      Choice("log-format", {"text", "json"}, "how log lines look", "text"),
      Choice("log-level", {"debug", "info", "warning", "error"}, "the least level logged", "info"),
      // The kubelet's are 50 and 100; ours asks far less (claims and pods
      // come from watches), but a burst of prepares must not wait on it.
      Text("kube-api-qps", "N", "requests a second to the API server, at most, on average", "20"),
      Bounded("kube-api-burst", "requests to the API server at once above --kube-api-qps", "50",
              100000),
      Text("resync", "DURATION",
           "how often the slices and the NodeGpuStatus are checked against the API server even "
           "without a change",
           "30s", FlagKind::kDuration),
      Choice("cache", {"on", "off"},
             "keep the node's caches (CachePlans) warm (the DaemonSet turns it on)", "off"),
      Text("cache-root", "DIR", "where the git mirrors and the model cache live (pods mount it)",
           "/var/lib/canhazgpu/cache"),
      Text("cache-disk-limit", "QUANTITY|N%",
           "most bytes the git and model caches may hold: a quantity such as 500Gi, a share of "
           "the cache's file system such as 40%, or 0 for no ceiling",
           "40%"),
      Text("cache-pull-deadline", "DURATION",
           "a pull still running after this long is stopped and retried later", "6h",
           FlagKind::kDuration),
      Bounded("cache-workers", "how many cache items are pulled at once", "2", 64),
      Text("container-runtime-endpoint", "PATH",
           "the CRI socket images are pulled through; default: the first of the usual ones", ""),
      Text("hf-endpoint", "URL", "the Hugging Face Hub or a mirror of it",
           "https://huggingface.co"),
      Text("cache-secret-namespaces", "NS[,NS...]",
           "the only namespaces whose Secrets plan items may name (pullSecretRef); a Secret is "
           "used only for the hosts in its canhazgpu.dev/credential-hosts annotation",
           cacheagent::kDefaultSecretNamespace, FlagKind::kList),
      Choice("cache-local-git", {"on", "off"},
             "accept file:// repositories in plans; tests and simulated clusters only (the agent "
             "is root, and every pod reads the cache)",
             "off"),
      Choice("cache-http-credentials", {"on", "off"},
             "send pull-secret credentials over plain http to loopback hosts; test servers only",
             "off"),
      {.name = "help", .short_name = 'h', .help = "show this help"},
  };
}

// "500Gi", "40%" of the cache's file system, or "0" for no ceiling.
absl::StatusOr<int64_t> DiskLimitBytes(const std::string& limit, const std::string& root) {
  if (limit.ends_with('%')) {
    int percent = 0;
    if (absl::SimpleAtoi(limit.substr(0, limit.size() - 1), &percent)) {
      return cacheagent::FileSystemShare(root, percent);
    }
  } else if (absl::StatusOr<int64_t> bytes = QuantityValue(limit); bytes.ok() && *bytes >= 0) {
    return *bytes;
  }
  return absl::InvalidArgumentError(
      StrCat("expected a byte count such as 500Gi, a share such as 40% or 0, got '", limit, "'"));
}

// The settings the flags say, or a one-line usage error naming the flag.
absl::StatusOr<daemon::NodeProgramSettings> SettingsFrom(const cli::ParsedFlags& flags) {
  auto value = [&flags](const char* name) { return flags.Value(name).value_or(""); };
  auto usage = [](std::string_view flag, const absl::Status& why) {
    return absl::InvalidArgumentError(StrCat("--", flag, ": ", why.message()));
  };
  daemon::NodeProgramSettings s{.node_name = value("node-name"),
                                .kubeconfig = value("kubeconfig"),
                                .state_path = value("state"),
                                .provider = value("provider"),
                                .fake_host = value("fake-host"),
                                .nvml_library = value("nvml-library"),
                                .plugin_dir = value("plugin-dir"),
                                .registrar_dir = value("registrar-dir"),
                                .cdi_dir = value("cdi-dir"),
                                .driver_root = value("driver-root"),
                                .mig_minors_path = value("mig-minors")};
  if (s.node_name.empty()) {
    return absl::InvalidArgumentError("--node-name (or K8SHAZGPU_NODE_NAME) is required");
  }
  s.sharing.enabled = value("gpu-sharing") == "memory";
  s.sharing.driver_root = s.driver_root;
  s.sharing.cgroup_root = value("cgroup-root");
  absl::StatusOr<int64_t> reserved = QuantityValue(value("gpu-reserved-memory"));
  if (!reserved.ok() || *reserved < 0) {
    return absl::InvalidArgumentError(
        StrCat("--gpu-reserved-memory: expected a byte count such as 512Mi or 1Gi, got '",
               value("gpu-reserved-memory"), "'"));
  }
  s.sharing.reserved_bytes = *reserved;
  absl::StatusOr<cli::ListenAddress> listen = cli::ParseListenAddress(value("http-listen"));
  if (!listen.ok()) return usage("http-listen", listen.status());
  s.http_host = listen->host;
  s.http_port = listen->port;
  if (!absl::SimpleAtod(value("kube-api-qps"), &s.api_qps) || !(s.api_qps > 0) ||
      s.api_qps > 10000) {
    return absl::InvalidArgumentError(
        StrCat("--kube-api-qps: expected a number above 0 up to 10000, got '",
               value("kube-api-qps"), "'"));
  }
  // The kinds were checked by the option layers: these parse.
  s.api_burst = std::stoi(value("kube-api-burst"));
  s.resync = std::chrono::duration_cast<Duration>(*ParseDuration(value("resync")));
  daemon::NodeCacheSettings& c = s.cache;
  c.enabled = value("cache") == "on";
  c.root = value("cache-root");
  c.disk_limit_text = value("cache-disk-limit");
  absl::StatusOr<int64_t> limit = DiskLimitBytes(c.disk_limit_text, c.root);
  if (!limit.ok()) return usage("cache-disk-limit", limit.status());
  c.disk_limit_bytes = *limit;
  c.pull_deadline = *ParseDuration(value("cache-pull-deadline"));
  c.workers = std::stoi(value("cache-workers"));
  c.runtime_endpoint = value("container-runtime-endpoint");
  c.hf_endpoint = value("hf-endpoint");
  for (std::string_view ns : Split(value("cache-secret-namespaces"), ',', /*skip_empty=*/true)) {
    c.secret_namespaces.emplace_back(Trim(ns));
  }
  c.allow_local_git = value("cache-local-git") == "on";
  c.allow_plain_http_to_loopback = value("cache-http-credentials") == "on";
  return s;
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

int Fail(absl::string_view message, int code = 1) {
  std::cerr << "k8shazgpu-node: " << message << "\n";
  return code;
}

int Main(const std::vector<std::string>& args) {
  const cli::OptionScope scope{.scope = "", .specs = Flags()};
  absl::StatusOr<cli::ParsedFlags> flags = cli::ParseFlags(args, scope.specs, "");
  if (!flags.ok()) return Fail(flags.status().message(), cli::kExitUsage);
  if (flags->Has("help")) {
    std::cout << "usage: k8shazgpu-node --node-name NAME [flags]\n" << cli::FlagHelp(scope.specs);
    return 0;
  }
  const cli::OptionSources sources{
      .getenv = [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
      },
      .env_prefix = "K8SHAZGPU_"};
  if (absl::Status s = cli::ApplyOptionLayers(scope, sources, *flags); !s.ok()) {
    return Fail(s.message(), cli::kExitUsage);
  }
  absl::StatusOr<daemon::NodeProgramSettings> settings = SettingsFrom(*flags);
  if (!settings.ok()) return Fail(settings.status().message(), cli::kExitUsage);

  sigset_t signals = cli::BlockStopSignals();  // before any thread starts
  const Log log(
      daemon::StderrLogSink(flags->Value("log-format") == "json" ? daemon::LogFormat::kJson
                                                                 : daemon::LogFormat::kText,
                            RealClock()),
      *ParseLogLevel(flags->Value("log-level").value_or("info")));
  settings->log = log;
  settings->before_prepare_completed = CrashHookForTests();
  absl::StatusOr<std::unique_ptr<daemon::NodeProgram>> program =
      daemon::NodeProgram::Start(*std::move(settings));
  if (!program.ok()) return Fail(program.status().message());
  int sig = 0;
  sigwait(&signals, &sig);
  log.Info("stopping");
  (*program)->Stop();
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
