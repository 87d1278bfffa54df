// `k8shazgpu-sim cluster`: a whole Kubernetes cluster on this machine.
// Start() serves the simulated API server, writes DIR/kubeconfig, applies
// deploy/'s DeviceClasses and CRDs, starts the control plane (simcluster:
// the scheduler stand-in, which allocates pods' claims with our allocator,
// and the resourceclaim controller), and for every node sets up a simulated
// host under DIR/nodes/<node>/ (a fake-host file and an initialised
// canhazgpu store, so `canhazgpu` works on the node too), its kubelet
// (simkubelet: registers the Node and the plugin, runs the node's pods as
// local processes) and the real k8shazgpu-node. The kubelets share one pod
// network (simkubelet/pod_network.h): each pod its own loopback address,
// and the names of headless Services' pods in its /etc/hosts. WaitUntilReady() returns
// once every node's plugin is registered and its GPUs are published.
// Stop() stops the control plane, the kubelets (and their containers), the
// daemons, then the server.
//
// With SimDriver::kNvidia the cluster looks like one running NVIDIA's DRA
// driver instead: NVIDIA's DeviceClasses (gpu.nvidia.com, mig.nvidia.com)
// instead of deploy/'s, no NodeGpuStatus CRD, and on each node, in place
// of k8shazgpu-node and the node's canhazgpu store, a FakeNvidiaPlugin
// (fake_nvidia_plugin.h) in this process.
//
// Layout of DIR:
//   kubeconfig, apiserver.log
//   nodes/<node>/state.db           the node's canhazgpu store (ours only)
//   nodes/<node>/fake-host.json     its GPUs (docs/fake-host.md)
//   nodes/<node>/mig-minors         its MIG capability minors (--mig-minors)
//   nodes/<node>/plugins/           --plugin-dir (dra.sock, checkpoint)
//   nodes/<node>/plugins_registry/  --registrar-dir
//   nodes/<node>/cdi/               --cdi-dir
//   nodes/<node>/node.log           the daemon's output
//   nodes/<node>/pods/              containers' work directories, pods'
//                                   volumes (<ns>_<pod>_<uid>/volumes/) and
//                                   hosts files (<ns>_<pod>_<uid>/etc-hosts)
//   nodes/<node>/root/              the node's root filesystem, as its pods
//                                   see it through hostPath volumes and an
//                                   absolute command (the image's binaries)
//   nodes/<node>/root/var/lib/canhazgpu/cache/   the cache agent's
//                                   --cache-root, so a pod's hostPath
//                                   /var/lib/canhazgpu/cache is the cache
//   nodes/<node>/root/usr/local/bin/k8shazgpu    a link to the CLI
//                                   (--cli-binary), which our image ships
//
// Threading: Start, WaitUntilReady and Stop from one thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/k8shazgpu_sim/fake_nvidia_plugin.h"
#include "cli/k8shazgpu_sim/node_process.h"
#include "cli/k8shazgpu_sim/simulated_host.h"
#include "cri/testing/fake_image_service.h"
#include "kube/client.h"
#include "kubesim/api_server.h"
#include "kubesim/object_store.h"
#include "simcluster/control_plane.h"
#include "simkubelet/kubelet.h"
#include "simkubelet/pod_network.h"

namespace canhazgpu::sim {

// Whose DRA driver the nodes run.
enum class SimDriver {
  kCanhazgpu,  // ours: the real k8shazgpu-node
  kNvidia,     // a test double of NVIDIA's (gpu.nvidia.com)
};

// "canhazgpu" or "nvidia"; InvalidArgument in one line otherwise.
absl::StatusOr<SimDriver> ParseSimDriver(const std::string& name);

struct ClusterOptions {
  std::string dir;
  SimDriver driver = SimDriver::kCanhazgpu;
  // kNvidia: its consumable-shares mode (FakeNvidiaPluginOptions).
  bool nvidia_consumable_shares = false;
  // One entry per node: node-0, node-1, ... (each passed CheckHostShape).
  std::vector<SimulatedHostShape> nodes = {SimulatedHostShape{}};
  std::string listen_host = "127.0.0.1";
  int port = 0;             // 0: a free one
  std::string node_binary;  // k8shazgpu-node; unused with kNvidia
  // Each k8shazgpu-node's --gpu-sharing: none, or memory (ADR 0018).
  std::string gpu_sharing = "none";
  // The k8shazgpu CLI, linked into every node root as
  // /usr/local/bin/k8shazgpu (pods' init containers run it); empty: no link.
  std::string cli_binary;
  // The nodes' cache agents: each node's container runtime (a CRI
  // emulator) can pull these images; models come from this Hub endpoint
  // (empty: huggingface.co, unreachable from a machine without network).
  std::vector<std::string> images = {"vllm/vllm-openai:latest"};
  std::string hf_endpoint;
  // The GenericWorkload feature gate: the API server serves PodGroups
  // (kubesim/pod_groups.h) and the scheduler gang-schedules their pods.
  bool generic_workload = false;
  // Progress and the daemons' restarts, one line each.
  std::function<void(const std::string&)> log;
};

struct SimNode {
  std::string name;
  std::string dir;
  std::unique_ptr<kube::Client> kubelet_client;  // each kubelet has its own, as real ones do
  std::unique_ptr<simkubelet::Kubelet> kubelet;
  std::unique_ptr<NodeProcess> daemon;                      // SimDriver::kCanhazgpu
  std::unique_ptr<cri::testing::FakeImageService> runtime;  // its CRI, for the cache agent
  std::unique_ptr<FakeNvidiaPlugin> nvidia_plugin;          // SimDriver::kNvidia
};

class SimCluster {
 public:
  static absl::StatusOr<std::unique_ptr<SimCluster>> Start(ClusterOptions options);
  ~SimCluster();

  // OK once every node's GPUs are in ResourceSlices; DeadlineExceeded
  // naming the nodes still missing (and where their logs are) otherwise.
  absl::Status WaitUntilReady(std::chrono::milliseconds timeout);
  void Stop();

  std::string kubeconfig() const { return options_.dir + "/kubeconfig"; }
  kube::RestConfig rest_config() const;
  std::string server_url() const { return url_; }
  const std::vector<SimNode>& nodes() const { return nodes_; }

 private:
  explicit SimCluster(ClusterOptions options);
  // pods/exec through the kubelet of the pod's node (after every node started).
  void ServeExec();
  absl::Status StartServer();
  absl::Status StartControlPlane();
  absl::Status StartPodNetwork();
  absl::Status ApplyAddons();
  absl::Status StartNode(int index);
  // Writes the node's canhazgpu store and starts k8shazgpu-node on it.
  absl::Status StartNodeDaemon(SimNode& node, const std::string& host_file,
                               const std::string& mig_minors);
  // The driver the nodes' plugins register as.
  std::string DriverName() const;

  ClusterOptions options_;
  std::unique_ptr<kubesim::ObjectStore> store_;
  std::unique_ptr<kubesim::ApiServer> server_;
  std::thread serve_thread_;
  std::string url_;
  std::unique_ptr<kube::Client> client_;
  const Clock& clock_ = RealClock();
  std::unique_ptr<kube::Client> control_plane_client_;
  std::unique_ptr<simcluster::ControlPlane> control_plane_;
  std::unique_ptr<kube::Client> network_client_;
  std::unique_ptr<simkubelet::PodNetwork> network_;  // outlives the kubelets
  std::vector<SimNode> nodes_;
  bool stopped_ = false;
};

}  // namespace canhazgpu::sim
