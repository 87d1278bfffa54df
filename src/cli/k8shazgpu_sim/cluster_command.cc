// `k8shazgpu-sim cluster --dir DIR [--nodes N] [--gpus-per-node M]
//  [--mig-gpus K | --cluster-file FILE] [--listen HOST:PORT] [--node-binary PATH] [--cli-binary
//  PATH]
//  [--driver canhazgpu|nvidia]`: runs a whole
// simulated cluster in the foreground (cluster.h) until SIGTERM or SIGINT.
// Once every node has published its GPUs it prints how to reach the
// cluster and writes DIR/ready, which scripts and tests wait for.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/common/exit_code.h"
#include "cli/common/flags.h"
#include "cli/common/listen_address.h"
#include "cli/common/stop_signals.h"
#include "cli/k8shazgpu_sim/cluster.h"
#include "cli/k8shazgpu_sim/cluster_file.h"
#include "cli/k8shazgpu_sim/command_flags.h"
#include "cli/k8shazgpu_sim/commands.h"
#include "core/file_read.h"
#include "core/file_write.h"
#include "core/mutex.h"
#include "core/strings.h"
#include "host/self_executable.h"

namespace canhazgpu::sim {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxNodes = kMaxSimNodes;
constexpr int kMaxGpusPerNode = kMaxSimGpusPerNode;

const std::vector<cli::FlagSpec> kClusterFlags = {
    {.name = "dir",
     .has_value = true,
     .value_name = "DIR",
     .help = "where the cluster keeps its kubeconfig, nodes and logs (required)"},
    {.name = "nodes",
     .has_value = true,
     .value_name = "N",
     .help = "how many nodes",
     .kind = cli::FlagKind::kPositiveInt,
     .max = kMaxNodes,
     .default_value = "2"},
    {.name = "gpus-per-node",
     .has_value = true,
     .value_name = "M",
     .help = "simulated H100 GPUs on each node (--cluster-file for other shapes)",
     .kind = cli::FlagKind::kPositiveInt,
     .max = kMaxGpusPerNode,
     .default_value = "4"},
    {.name = "mig-gpus",
     .has_value = true,
     .value_name = "K",
     .help = "the first K GPUs of each node are in MIG mode, as seven 1g.10gb instances",
     .kind = cli::FlagKind::kCount,
     .max = kMaxGpusPerNode,
     .default_value = "0"},
    {.name = "cluster-file",
     .has_value = true,
     .value_name = "FILE",
     .help = "each node's GPU model, GPU count and MIG layout, in YAML or JSON "
             "(docs/simulated-cluster.md); instead of --nodes, --gpus-per-node, --mig-gpus"},
    {.name = "listen",
     .has_value = true,
     .value_name = "HOST:PORT",
     .help = "the API server's address; port 0 picks a free one",
     .default_value = "127.0.0.1:0"},
    {.name = "node-binary",
     .has_value = true,
     .value_name = "PATH",
     .help = "the k8shazgpu-node to run (default: the one installed or built beside this)"},
    {.name = "cli-binary",
     .has_value = true,
     .value_name = "PATH",
     .help = "the k8shazgpu CLI every node root has as /usr/local/bin/k8shazgpu, as our image "
             "does (default: the one installed or built beside this)"},
    {.name = "driver",
     .has_value = true,
     .value_name = "NAME",
     .help = "whose DRA driver the nodes run: canhazgpu (ours, the real k8shazgpu-node) or "
             "nvidia (a stand-in for NVIDIA's gpu.nvidia.com driver)",
     .default_value = "canhazgpu"},
    {.name = "gpu-sharing",
     .has_value = true,
     .value_name = "none|memory",
     .help = "each k8shazgpu-node's --gpu-sharing: memory also shares full GPUs by memory",
     .default_value = "none"},
    {.name = "nvidia-consumable-shares",
     .help = "with --driver nvidia: its --consumable-shares=memory mode, GPUs shared by memory "
             "(booked, not limited)"},
    {.name = "feature-gates",
     .has_value = true,
     .value_name = "NAME=BOOL,...",
     .help = "Kubernetes feature gates beyond 1.34's defaults; the one known is GenericWorkload "
             "(PodGroups and gang scheduling, scheduling.k8s.io/v1beta1 as in 1.37)"},
    {.name = "hf-endpoint",
     .has_value = true,
     .value_name = "URL",
     .help = "the Hugging Face Hub the nodes' cache agents download models from (a local one "
             "in tests)"},
    {.name = "image",
     .has_value = true,
     .value_name = "REF",
     .help = "an image the nodes' simulated container runtimes can pull (repeatable; "
             "vllm/vllm-openai:latest always can)",
     .repeatable = true},
    {.name = "help", .short_name = 'h', .help = "show this help"},
};

constexpr char kUsage[] =
    "usage: k8shazgpu-sim cluster --dir DIR [flags]\n"
    "Runs a simulated Kubernetes cluster on this machine until interrupted: the API\n"
    "server, and on every node the real k8shazgpu-node on simulated GPUs.\n";

// A binary beside this one: installed together (<self>/NAME), or in the
// build tree's sibling directory (<self>/../SUBDIR/NAME); "" when neither.
std::string BinaryBeside(const std::string& name, const std::string& build_subdir) {
  const std::string self = host::SelfExecutableDir();
  for (const std::string& candidate :
       {StrCat(self, "/", name), StrCat(self, "/../", build_subdir, "/", name)}) {
    if (!self.empty() && access(candidate.c_str(), X_OK) == 0) {
      return fs::path(candidate).lexically_normal().string();
    }
  }
  return "";
}

// The nodes' shapes: from --cluster-file, or --nodes alike ones. Returns an
// exit code when the flags are wrong.
std::optional<int> ReadNodeShapes(const cli::ParsedFlags& flags, ClusterOptions* options) {
  auto value = [&](const char* name) { return FlagOrDefault(flags, kClusterFlags, name); };
  if (std::optional<std::string> file = flags.Value("cluster-file")) {
    for (const char* uniform : {"nodes", "gpus-per-node", "mig-gpus"}) {
      if (flags.Value(uniform)) {
        std::cerr << "k8shazgpu-sim: cluster: --" << uniform
                  << " and --cluster-file cannot be used together\n";
        return cli::kExitUsage;
      }
    }
    absl::StatusOr<std::string> text = ReadRegularFile(*file, 1 << 20, "cluster file");
    absl::StatusOr<std::vector<SimulatedHostShape>> shapes =
        text.ok() ? ParseClusterFile(*text) : text.status();
    if (!shapes.ok()) {
      std::cerr << "k8shazgpu-sim: " << shapes.status().message() << "\n";
      return cli::kExitUsage;
    }
    options->nodes = *std::move(shapes);
    return std::nullopt;
  }
  const int gpus = std::stoi(value("gpus-per-node"));
  const int mig_gpus = std::stoi(value("mig-gpus"));
  if (mig_gpus > gpus) {
    std::cerr << "k8shazgpu-sim: --mig-gpus " << mig_gpus << " is more than --gpus-per-node "
              << gpus << "\n";
    return cli::kExitUsage;
  }
  options->nodes.assign(std::stoi(value("nodes")), UniformHostShape(gpus, mig_gpus));
  return std::nullopt;
}

// --feature-gates as kube-apiserver reads it: NAME=true|false, comma
// separated. An exit code when it names a gate we do not simulate.
std::optional<int> ReadFeatureGates(const std::string& gates, ClusterOptions* options) {
  for (std::string_view gate : Split(gates, ',', /*skip_empty=*/true)) {
    const size_t eq = gate.find('=');
    const std::string_view name = Trim(gate.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? "" : Trim(gate.substr(eq + 1));
    if (name != "GenericWorkload") {
      std::cerr << "k8shazgpu-sim: --feature-gates: unrecognized feature gate: " << name
                << " (the one simulated is GenericWorkload)\n";
      return cli::kExitUsage;
    }
    if (value != "true" && value != "false") {
      std::cerr << "k8shazgpu-sim: --feature-gates: invalid value of " << name << ": '" << value
                << "', expected true or false\n";
      return cli::kExitUsage;
    }
    options->generic_workload = value == "true";
  }
  return std::nullopt;
}

// Everything but the log from the flags. Returns an exit code when the flags
// are wrong.
std::optional<int> ClusterOptionsFromFlags(const cli::ParsedFlags& flags, ClusterOptions* options) {
  auto value = [&](const char* name) { return FlagOrDefault(flags, kClusterFlags, name); };
  options->dir = value("dir");
  if (options->dir.empty()) {
    std::cerr << "k8shazgpu-sim: cluster: --dir DIR is required\n";
    return cli::kExitUsage;
  }
  options->hf_endpoint = value("hf-endpoint");
  options->gpu_sharing = value("gpu-sharing");
  if (options->gpu_sharing != "none" && options->gpu_sharing != "memory") {
    std::cerr << "k8shazgpu-sim: --gpu-sharing: expected none or memory, got '"
              << options->gpu_sharing << "'\n";
    return cli::kExitUsage;
  }
  for (const std::string& image : flags.Values("image")) options->images.push_back(image);
  if (std::optional<int> exit = ReadFeatureGates(value("feature-gates"), options)) return exit;
  if (std::optional<int> exit = ReadNodeShapes(flags, options)) return exit;
  absl::StatusOr<cli::ListenAddress> listen = cli::ParseListenAddress(value("listen"));
  if (!listen.ok()) {
    std::cerr << "k8shazgpu-sim: --listen: " << listen.status().message() << "\n";
    return cli::kExitUsage;
  }
  options->listen_host = listen->host;
  options->port = listen->port;
  absl::StatusOr<SimDriver> driver = ParseSimDriver(value("driver"));
  if (!driver.ok()) {
    std::cerr << "k8shazgpu-sim: " << driver.status().message() << "\n";
    return cli::kExitUsage;
  }
  options->driver = *driver;
  options->nvidia_consumable_shares = flags.Has("nvidia-consumable-shares");
  if (options->nvidia_consumable_shares && options->driver != SimDriver::kNvidia) {
    std::cerr << "k8shazgpu-sim: --nvidia-consumable-shares is a mode of --driver nvidia\n";
    return cli::kExitUsage;
  }
  options->node_binary =
      flags.Value("node-binary").value_or(BinaryBeside("k8shazgpu-node", "k8shazgpu_node"));
  options->cli_binary = flags.Value("cli-binary").value_or(BinaryBeside("k8shazgpu", "k8shazgpu"));
  if (options->node_binary.empty() && options->driver == SimDriver::kCanhazgpu) {
    std::cerr << "k8shazgpu-sim: cannot find k8shazgpu-node beside this binary; pass --node-binary "
                 "PATH\n";
    return cli::kExitUsage;
  }
  if (!options->cli_binary.empty() && access(options->cli_binary.c_str(), X_OK) != 0) {
    std::cerr << "k8shazgpu-sim: cluster: --cli-binary " << options->cli_binary
              << " is not an executable file\n";
    return cli::kExitUsage;
  }
  return std::nullopt;
}

// Tells the user how to reach the cluster, and writes DIR/ready for scripts
// waiting on it.
void AnnounceClusterReady(const SimCluster& cluster, SimDriver driver, const std::string& dir) {
  const std::string kubeconfig = cluster.kubeconfig();
  std::cout << "k8shazgpu-sim: cluster ready: " << cluster.nodes().size() << " nodes on "
            << cluster.server_url() << "\n"
            << "  export KUBECONFIG=" << kubeconfig << "\n"
            << "  kubectl get resourceslices\n";
  if (driver == SimDriver::kCanhazgpu) {
    std::cout << "  CANHAZGPU_STATE=" << cluster.nodes().front().dir
              << "/state.db canhazgpu status   # a node's GPUs, as its users see them\n";
  }
  std::cout << std::flush;
  if (absl::Status s = WriteFileAtomically(StrCat(fs::absolute(dir).string(), "/ready"),
                                           kubeconfig + "\n", 0644);
      !s.ok()) {
    std::cerr << "k8shazgpu-sim: " << s.message() << "\n";
  }
}

}  // namespace

int ClusterMain(const std::vector<std::string>& args) {
  cli::ParsedFlags flags;
  if (std::optional<int> exit = ParseCommandFlags(args, kClusterFlags, "cluster", kUsage, &flags)) {
    return *exit;
  }
  ClusterOptions options;
  if (std::optional<int> exit = ClusterOptionsFromFlags(flags, &options)) return *exit;
  Mutex log_mu;
  options.log = [&log_mu](const std::string& line) {
    MutexLock lock(log_mu);
    std::cerr << "k8shazgpu-sim: " << line << "\n";
  };

  sigset_t signals = cli::BlockStopSignals();  // before any thread starts

  const std::string dir = options.dir;
  const SimDriver driver = options.driver;
  absl::StatusOr<std::unique_ptr<SimCluster>> cluster = SimCluster::Start(std::move(options));
  if (!cluster.ok()) {
    std::cerr << "k8shazgpu-sim: " << cluster.status().message() << "\n";
    return 1;
  }
  if (absl::Status ready = (*cluster)->WaitUntilReady(std::chrono::seconds(60)); !ready.ok()) {
    std::cerr << "k8shazgpu-sim: " << ready.message() << "\n";
    (*cluster)->Stop();
    return 1;
  }
  AnnounceClusterReady(**cluster, driver, dir);
  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "k8shazgpu-sim: stopping\n";
  (*cluster)->Stop();
  std::cerr << "k8shazgpu-sim: stopped\n";
  return 0;
}

}  // namespace canhazgpu::sim
