#include "cli/k8shazgpu_sim/cluster.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "alloc/reservations.h"
#include "cli/k8shazgpu_sim/addons.h"
#include "cli/k8shazgpu_sim/sim_kubeconfig.h"
#include "core/clock.h"
#include "core/file_write.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "dra/devices.h"
#include "host/linux_process_table.h"
#include "kubesim/patch.h"
#include "store/sqlite_state_store.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::sim {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const kube::ResourceRef kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};

// Where an addon object is created; only the kinds deploy/ ships to
// cluster scope are expected.
absl::StatusOr<kube::ResourceRef> RefOf(const json& object, const std::string& source) {
  const std::string kind = object.value("kind", "");
  if (kind == "DeviceClass") return kube::kDeviceClasses;
  if (kind == "CustomResourceDefinition") return kCrds;
  return absl::InvalidArgumentError(
      StrCat(source, ": the simulator does not apply objects of kind '", kind, "'"));
}

// A directory the simulator may take: missing, empty, or one it made before
// (then what a previous run left is removed: its API server was in memory).
absl::Status PrepareDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(StrCat("cannot create ", dir, ": ", ec.message()));
  bool empty = true;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    (void)entry;
    empty = false;
    break;
  }
  if (empty) return absl::OkStatus();
  if (!fs::exists(dir + "/kubeconfig") || !fs::is_directory(dir + "/nodes")) {
    return absl::FailedPreconditionError(
        StrCat(dir,
               " is not empty and holds no earlier simulated cluster; give an empty or new "
               "--dir"));
  }
  fs::remove_all(dir + "/nodes", ec);
  if (ec)
    return absl::FailedPreconditionError(StrCat("cannot clear ", dir, "/nodes: ", ec.message()));
  fs::remove(dir + "/kubeconfig", ec);
  fs::remove(dir + "/ready", ec);
  return absl::OkStatus();
}

// NVIDIA's DeviceClasses, as its Helm chart (k8s-dra-driver-gpu) ships them.
std::vector<json> NvidiaDeviceClasses() {
  std::vector<json> classes;
  for (const std::string type : {"gpu", "mig"}) {
    json cls = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                               "metadata": {}, "spec": {"selectors": [{"cel": {}}]}})");
    cls["metadata"]["name"] = type + ".nvidia.com";
    cls["spec"]["selectors"][0]["cel"]["expression"] =
        R"(device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == ")" +
        type + "\"";
    classes.push_back(std::move(cls));
  }
  return classes;
}

// The node's root filesystem stand-in, and where its cache lives inside it
// (k8shazgpu-node's default --cache-root, which pods mount as hostPath).
std::string NodeRoot(const std::string& node_dir) { return node_dir + "/root"; }
std::string NodeCacheRoot(const std::string& node_dir) {
  return NodeRoot(node_dir) + "/var/lib/canhazgpu/cache";
}

// The node root with its cache directory and, when we know where the CLI
// is, /usr/local/bin/k8shazgpu as our image has it.
absl::Status PrepareNodeRoot(const std::string& node_dir, const std::string& cli_binary,
                             const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  fs::create_directories(NodeCacheRoot(node_dir), ec);
  if (ec)
    return absl::FailedPreconditionError(StrCat("cannot create ", node_dir, ": ", ec.message()));
  if (cli_binary.empty()) {
    log("no k8shazgpu CLI found beside the simulator (--cli-binary): pods running "
        "/usr/local/bin/k8shazgpu will fail to start");
    return absl::OkStatus();
  }
  const std::string bin = NodeRoot(node_dir) + "/usr/local/bin";
  fs::create_directories(bin, ec);
  fs::create_symlink(fs::absolute(cli_binary), bin + "/k8shazgpu", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        StrCat("cannot link ", bin, "/k8shazgpu to ", cli_binary, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimDriver> ParseSimDriver(const std::string& name) {
  if (name == "canhazgpu") return SimDriver::kCanhazgpu;
  if (name == "nvidia") return SimDriver::kNvidia;
  return absl::InvalidArgumentError(
      StrCat("--driver: unknown driver '", name, "'; say canhazgpu or nvidia"));
}

SimCluster::SimCluster(ClusterOptions options) : options_(std::move(options)) {
  if (!options_.log) options_.log = [](const std::string&) {};
}

SimCluster::~SimCluster() { Stop(); }

absl::StatusOr<std::unique_ptr<SimCluster>> SimCluster::Start(ClusterOptions options) {
  options.dir = fs::absolute(options.dir).lexically_normal().string();
  RETURN_IF_ERROR(PrepareDir(options.dir));
  std::unique_ptr<SimCluster> cluster(new SimCluster(std::move(options)));
  RETURN_IF_ERROR(cluster->StartServer());
  RETURN_IF_ERROR(cluster->ApplyAddons());
  RETURN_IF_ERROR(cluster->StartControlPlane());
  RETURN_IF_ERROR(cluster->StartPodNetwork());
  for (size_t i = 0; i < cluster->options_.nodes.size(); ++i)
    RETURN_IF_ERROR(cluster->StartNode(static_cast<int>(i)));
  cluster->ServeExec();
  return cluster;
}

void SimCluster::ServeExec() {
  // The kubelet of the node the pod is bound to; nodes_ no longer changes.
  auto kubelet_of = [this](const kubesim::ExecRequest& r) -> absl::StatusOr<simkubelet::Kubelet*> {
    absl::StatusOr<nlohmann::json> pod = client_->Get(kube::kPods, r.ns, r.pod);
    if (!pod.ok()) return pod.status();
    const std::string node = kube::StringAt(*pod, "/spec/nodeName"_json_pointer);
    for (SimNode& n : nodes_)
      if (n.name == node && n.kubelet) return n.kubelet.get();
    return absl::FailedPreconditionError(StrCat("pod ", r.pod, " is not on a node yet"));
  };
  server_->SetExecHandler(
      {.check =
           [kubelet_of](const kubesim::ExecRequest& r) {
             absl::StatusOr<simkubelet::Kubelet*> kubelet = kubelet_of(r);
             if (!kubelet.ok()) return kubelet.status();
             return (*kubelet)->CheckExec(r.ns, r.pod, r.container);
           },
       .run = [kubelet_of](const kubesim::ExecRequest& r,
                           const kubesim::ExecStreams& streams) -> absl::StatusOr<int> {
         absl::StatusOr<simkubelet::Kubelet*> kubelet = kubelet_of(r);
         if (!kubelet.ok()) return kubelet.status();
         return (*kubelet)->Exec(
             r.ns, r.pod, r.container, r.argv,
             {.output = streams.output, .read_input = streams.read_input, .tty = r.tty});
       }});
}

absl::Status SimCluster::StartServer() {
  store_ = std::make_unique<kubesim::ObjectStore>(10'000);
  // As in a real cluster, deleting an owner leaves its dependents to the
  // garbage collector (the control plane's), which also collects those
  // whose owner never existed.
  store_->set_collect_background_dependents(false);
  if (options_.generic_workload) store_->EnableGenericWorkload();
  auto log_file = std::make_shared<std::ofstream>(options_.dir + "/apiserver.log", std::ios::app);
  auto log_mu = std::make_shared<Mutex>();
  kubesim::ApiServerOptions server_options{.log = [log_file, log_mu](const std::string& line) {
    MutexLock lock(*log_mu);
    *log_file << line << "\n";
    log_file->flush();
  }};
  server_ = std::make_unique<kubesim::ApiServer>(*store_, std::move(server_options));
  ASSIGN_OR_RETURN(int port, server_->Bind(options_.listen_host, options_.port));
  serve_thread_ = std::thread([this] { server_->Serve(); });
  const bool ipv6 = options_.listen_host.find(':') != std::string::npos;
  url_ = StrCat("http://", ipv6 ? "[" : "", options_.listen_host, ipv6 ? "]" : "", ":", port);
  RETURN_IF_ERROR(WriteFileAtomically(kubeconfig(), SimKubeconfig(url_, "", nullptr), 0600));
  ASSIGN_OR_RETURN(client_, kube::Client::Create(rest_config(), {.qps = 200, .burst = 400}));
  options_.log(StrCat("API server on ", url_, "; kubeconfig in ", kubeconfig()));
  return absl::OkStatus();
}

kube::RestConfig SimCluster::rest_config() const {
  kube::RestConfig config;
  config.server = url_;
  return config;
}

std::string SimCluster::DriverName() const {
  return options_.driver == SimDriver::kNvidia ? kNvidiaDriverName : dra::kDriverName;
}

absl::Status SimCluster::ApplyAddons() {
  if (options_.driver == SimDriver::kNvidia) {
    for (const json& cls : NvidiaDeviceClasses()) {
      absl::StatusOr<json> created = client_->CreateObject(kube::kDeviceClasses, "", cls);
      if (!created.ok())
        return absl::InternalError(StrCat("NVIDIA's DeviceClasses: ", created.status().message()));
    }
    return absl::OkStatus();
  }
  for (const Addon& addon : Addons()) {
    absl::StatusOr<std::vector<json>> objects = yaml::DocumentsToJson(addon.yaml);
    if (!objects.ok())
      return absl::InternalError(StrCat(addon.source, ": ", objects.status().message()));
    for (const json& object : *objects) {
      ASSIGN_OR_RETURN(kube::ResourceRef ref, RefOf(object, addon.source));
      absl::StatusOr<json> created = client_->CreateObject(ref, "", object);
      if (!created.ok()) {
        return absl::InternalError(StrCat(addon.source, ": ", created.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SimCluster::StartControlPlane() {
  ASSIGN_OR_RETURN(control_plane_client_,
                   kube::Client::Create(rest_config(), {.qps = 1000, .burst = 1000}));
  ASSIGN_OR_RETURN(control_plane_,
                   simcluster::ControlPlane::Create(
                       *control_plane_client_, {.clock = &clock_,
                                                .log =
                                                    [log = options_.log](const std::string& line) {
                                                      log(StrCat("control plane: ", line));
                                                    },
                                                .generic_workload = options_.generic_workload}));
  return control_plane_->Start();
}

absl::Status SimCluster::StartPodNetwork() {
  ASSIGN_OR_RETURN(network_client_,
                   kube::Client::Create(rest_config(), {.qps = 1000, .burst = 1000}));
  network_ = std::make_unique<simkubelet::PodNetwork>(
      *network_client_,
      simkubelet::PodNetworkOptions{.log = [log = options_.log](const std::string& line) {
        log(StrCat("pod network: ", line));
      }});
  return network_->Start();
}

absl::Status SimCluster::StartNode(int index) {
  SimNode node;
  node.name = SimulatedNodeName(index);
  node.dir = StrCat(options_.dir, "/nodes/", node.name);
  std::error_code ec;
  for (const char* sub : {"plugins", "plugins_registry", "cdi", "pods"}) {
    fs::create_directories(StrCat(node.dir, "/", sub), ec);
    if (ec)
      return absl::FailedPreconditionError(StrCat("cannot create ", node.dir, ": ", ec.message()));
  }
  const std::string host_file = node.dir + "/fake-host.json";
  RETURN_IF_ERROR(
      WriteFileAtomically(host_file, SimulatedHostJson(index, options_.nodes[index]), 0644));
  // What the driver would list in /proc for the host's MIG instances.
  const std::string mig_minors = node.dir + "/mig-minors";
  RETURN_IF_ERROR(WriteFileAtomically(mig_minors, SimulatedMigMinors(options_.nodes[index]), 0644));
  const std::string name = node.name;
  auto log = [log = options_.log, name](const std::string& line) { log(StrCat(name, ": ", line)); };
  RETURN_IF_ERROR(PrepareNodeRoot(node.dir, options_.cli_binary, log));
  // The kubelet first: it registers the Node the driver's objects belong
  // to, and it watches for the plugin's socket.
  ASSIGN_OR_RETURN(node.kubelet_client,
                   kube::Client::Create(rest_config(), {.qps = 1000, .burst = 1000}));
  simkubelet::KubeletOptions kubelet;
  kubelet.node_name = node.name;
  kubelet.registrar_dir = node.dir + "/plugins_registry";
  kubelet.cdi_dir = node.dir + "/cdi";
  kubelet.pods_dir = node.dir + "/pods";
  kubelet.root_dir = NodeRoot(node.dir);
  kubelet.log = log;
  kubelet.network = network_.get();
  node.kubelet =
      std::make_unique<simkubelet::Kubelet>(*node.kubelet_client, server_->logs(), kubelet);
  RETURN_IF_ERROR(node.kubelet->Start());
  if (options_.driver == SimDriver::kNvidia) {
    ASSIGN_OR_RETURN(node.nvidia_plugin,
                     FakeNvidiaPlugin::Start(
                         rest_config(), {.node_name = node.name,
                                         .host_file = host_file,
                                         .plugin_dir = node.dir + "/plugins",
                                         .registrar_dir = node.dir + "/plugins_registry",
                                         .cdi_dir = node.dir + "/cdi",
                                         .consumable_shares = options_.nvidia_consumable_shares,
                                         .log = log}));
  } else {
    RETURN_IF_ERROR(StartNodeDaemon(node, host_file, mig_minors));
  }
  nodes_.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status SimCluster::StartNodeDaemon(SimNode& node, const std::string& host_file,
                                         const std::string& mig_minors) {
  const std::string state = node.dir + "/state.db";
  {
    // The node's canhazgpu store, initialised as `canhazgpu admin --provider
    // fake` would: the daemon and anyone running canhazgpu there share it.
    ASSIGN_OR_RETURN(std::unique_ptr<store::SqliteStateStore> store,
                     store::SqliteStateStore::Open(state, {.create = true}));
    const Clock& clock = RealClock();
    host::LinuxProcessTable processes;
    RETURN_IF_ERROR(alloc::InitializePool(
        *store, PoolConfig{options_.nodes[nodes_.size()].gpus, "fake", host_file},
        /*force=*/false, alloc::Machine{clock, processes}));
  }
  const std::string name = node.name;
  auto log = [log = options_.log, name](const std::string& line) { log(StrCat(name, ": ", line)); };
  // The node's container runtime, as far as the cache agent sees it.
  absl::StatusOr<std::unique_ptr<cri::testing::FakeImageService>> runtime =
      cri::testing::FakeImageService::Start(node.dir + "/cri.sock");
  if (!runtime.ok()) return runtime.status();
  node.runtime = *std::move(runtime);
  for (const std::string& image : options_.images) {
    node.runtime->AddToRegistry(image, {.size = 8u << 30});
  }
  std::vector<std::string> cache_args = {
      "--cache", "on", "--cache-root", NodeCacheRoot(node.dir), "--container-runtime-endpoint",
      node.runtime->socket_path(),
      // Its "remote" repositories and servers
      // are on this machine.
      "--cache-local-git", "on", "--cache-http-credentials", "on"};
  if (!options_.hf_endpoint.empty()) {
    cache_args.insert(cache_args.end(), {"--hf-endpoint", options_.hf_endpoint});
  }
  std::vector<std::string> args = {"--node-name",     node.name,
                                   "--kubeconfig",    kubeconfig(),
                                   "--state",         state,
                                   "--provider",      "fake",
                                   "--fake-host",     host_file,
                                   "--plugin-dir",    node.dir + "/plugins",
                                   "--registrar-dir", node.dir + "/plugins_registry",
                                   "--cdi-dir",       node.dir + "/cdi",
                                   "--mig-minors",    mig_minors,
                                   "--http-listen",   "127.0.0.1:0",
                                   "--gpu-sharing",   options_.gpu_sharing};
  args.insert(args.end(), cache_args.begin(), cache_args.end());
  node.daemon = std::make_unique<NodeProcess>(NodeProcessOptions{.binary = options_.node_binary,
                                                                 .args = std::move(args),
                                                                 .log_path = node.dir + "/node.log",
                                                                 .log = log});
  return node.daemon->Start();
}

absl::Status SimCluster::WaitUntilReady(std::chrono::milliseconds timeout) {
  const auto deadline = RealClock().MonoNow() + timeout;
  std::set<std::string> missing;
  while (true) {
    missing.clear();
    for (const SimNode& node : nodes_) missing.insert(node.name);
    absl::StatusOr<json> slices = client_->ListAll(kube::kResourceSlices, "");
    if (slices.ok()) {
      for (const json& slice : (*slices)["items"]) {
        const json& spec = slice["spec"];
        if (!spec.value("devices", json::array()).empty())
          missing.erase(spec.value("nodeName", ""));
      }
    }
    for (const SimNode& node : nodes_) {
      if (node.kubelet->plugins().Registrations(DriverName()) == 0) missing.insert(node.name);
    }
    if (missing.empty()) return absl::OkStatus();
    if (RealClock().MonoNow() >= deadline) break;
    RealClock().SleepFor(std::chrono::milliseconds(100));
  }
  std::vector<std::string> logs;
  for (const std::string& name : missing)
    logs.push_back(StrCat(options_.dir, "/nodes/", name, "/node.log"));
  // The fake NVIDIA plugins log to the simulator's own output.
  if (options_.driver == SimDriver::kNvidia) logs = {"the output above"};
  return absl::DeadlineExceededError(
      StrCat("no ResourceSlices from ",
             Join(std::vector<std::string>(missing.begin(), missing.end()), ", "), " after ",
             timeout.count() / 1000, " s; see ", Join(logs, ", ")));
}

void SimCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (control_plane_) control_plane_->Stop();
  // Node by node would add up each one's second or two of goodbyes; the
  // kubelets all stop first (their containers with them), then the daemons.
  auto on_every_node = [this](const std::function<void(SimNode&)>& stop) {
    std::vector<std::thread> stoppers;
    for (SimNode& node : nodes_) stoppers.emplace_back([&stop, &node] { stop(node); });
    for (std::thread& t : stoppers) t.join();
  };
  on_every_node([](SimNode& node) {
    if (node.kubelet) node.kubelet->Stop();
  });
  on_every_node([](SimNode& node) {
    if (node.daemon) node.daemon->Stop();
    if (node.nvidia_plugin) node.nvidia_plugin->Stop();
  });
  // Our own clients keep idle connections open, and the server's shutdown
  // waits for each idle connection's keep-alive timeout (cpp-httplib: 5 s)
  // before it returns: close them first, by destroying the clients.
  if (server_) server_->SetExecHandler({});  // no new execs; the kubelets end the running ones
  control_plane_.reset();
  control_plane_client_.reset();
  for (SimNode& node : nodes_) {
    node.nvidia_plugin.reset();
    node.kubelet.reset();
    node.kubelet_client.reset();
  }
  network_.reset();  // after the kubelets, which gave their pods' addresses back
  network_client_.reset();
  client_.reset();
  if (server_) server_->Stop();
  if (serve_thread_.joinable()) serve_thread_.join();
}

}  // namespace canhazgpu::sim
