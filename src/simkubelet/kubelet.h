// simkubelet::Kubelet: the kubelet of one simulated node, for
// `k8shazgpu-sim cluster` and tests. It keeps the node's Node object (Ready,
// with a heartbeat), registers the DRA plugins whose sockets appear in the
// registrar directory (plugin_watcher.h), and runs every pod bound to the
// node (spec.nodeName) as local processes (pod_worker.h), each pod with
// its own address and hosts file on the cluster's pod network
// (pod_network.h) where one is given: volumes made
// under the pod's directory (pod_volumes.h, mount_paths.h), claims prepared
// through the plugins with the kubelet's timeouts and messages, the
// devices' health from the plugins' health streams in each container's
// allocatedResourcesStatus, container
// environments from the CDI specs the drivers wrote, output appended to the
// API server's pods/log (PodLogs), status written through pods/status.
//
// Ownership: the client and the logs belong to the caller and must outlive
// the Kubelet. Threading: Start() and Stop() from one thread; inside, an
// informer thread, the plugin watcher's thread, a heartbeat thread, and one
// thread per pod (plus one per running container).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kubeletplugin/kubelet_client.h"
#include "kubesim/pod_logs.h"
#include "simkubelet/node_object.h"
#include "simkubelet/plugin_watcher.h"
#include "simkubelet/pod_claims.h"
#include "simkubelet/pod_network.h"
#include "simkubelet/pod_worker.h"

namespace canhazgpu::simkubelet {

struct KubeletOptions {
  std::string node_name;  // required
  // Watched for DRA plugins' registration sockets; created if missing.
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";
  // Where the drivers write their CDI specs.
  std::string cdi_dir = "/var/run/cdi";
  // Containers' work directories: <pods_dir>/<ns>_<pod>_<uid>/<container>;
  // the pod's volumes in <pods_dir>/<ns>_<pod>_<uid>/volumes/<volume>.
  std::string pods_dir;  // required
  // The node's root filesystem stand-in: hostPath volumes are resolved
  // under it, and an absolute argv[0] found under it runs from there (the
  // binaries of our image). Empty: the real /.
  std::string root_dir;
  // Node labels beside kubernetes.io/hostname, kubernetes.io/os,
  // kubernetes.io/arch and canhazgpu.dev/gpu=true.
  std::map<std::string, std::string> node_labels;
  std::string host_ip = "127.0.0.1";
  std::string cpu = "8";
  std::string memory = "32Gi";
  std::string max_pods = "110";
  // The kubelet's nodeStatusUpdateFrequency.
  std::chrono::milliseconds node_status_period{10'000};
  // A pod whose claims could not be prepared is tried again after this
  // (the kubelet's pod worker back-off).
  std::chrono::milliseconds prepare_retry{10'000};
  // The crash-loop back-off: doubled from the first to the cap.
  std::chrono::milliseconds restart_backoff_initial{10'000};
  std::chrono::milliseconds restart_backoff_max{300'000};
  // Dial, GetInfo, Notify and the 45 s prepare deadline (kubelet_client.h).
  kubeletplugin::KubeletClientOptions plugin_client;
  const Clock* clock = nullptr;  // null: the system's
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // The cluster's pod network, shared by its kubelets and outliving them;
  // null: every pod on the host network (podIP = host_ip, the machine's
  // /etc/hosts and hostname).
  PodNetwork* network = nullptr;
};

class Kubelet {
 public:
  Kubelet(kube::Client& client, kubesim::PodLogs& logs, KubeletOptions options);
  // Stops if running.
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  // Registers the Node, starts watching for plugins and for the node's
  // pods. An error when the Node cannot be written or the registrar
  // directory not watched.
  absl::Status Start();
  // Kills every container and joins every thread. Claims stay prepared,
  // as the real kubelet leaves them when it stops (its checkpoint keeps
  // them; this one has none). Idempotent.
  void Stop();

  const PluginWatcher& plugins() const { return *plugins_; }

  // `kubectl exec` in a running container of pod `ns`/`pod` on this node:
  // whether it can run (the refusal in the kubelet's words otherwise), and
  // running `argv` there to its end — the container's environment, work
  // directory and mount rewriting, argv[0] found on the node root as the
  // container's own command is — handing over its output as it comes
  // (1 stdout, 2 stderr) and returning its exit code.
  absl::Status CheckExec(const std::string& ns, const std::string& pod,
                         const std::string& container);
  // With `read_input` (`kubectl exec -i`), the command's stdin is what it
  // returns until it returns false; it is asked again until `stop` is set
  // and should then return false soon. With `tty`, the command runs on a
  // terminal (its output all on 1).
  struct ExecIo {
    std::function<void(int, std::string_view)> output;
    std::function<bool(std::string*, const std::atomic<bool>& stop)> read_input;
    bool tty = false;
  };
  absl::StatusOr<int> Exec(const std::string& ns, const std::string& pod,
                           const std::string& container, const std::vector<std::string>& argv,
                           const ExecIo& io);

 private:
  absl::StatusOr<PodWorker::ExecContext> ExecContextOf(const std::string& ns,
                                                       const std::string& pod,
                                                       const std::string& container);
  void OnPod(const nlohmann::json& pod);
  void OnPodDeleted(const nlohmann::json& pod);
  void OnHealthChanged();
  void Heartbeat();

  kube::Client& client_;
  kubesim::PodLogs& logs_;
  KubeletOptions options_;
  const Clock& clock_;
  NodeSettings node_;
  std::string registered_at_;
  kube::EventRecorder events_;
  DeviceHealthCache health_;
  std::unique_ptr<PluginWatcher> plugins_;
  DraManager dra_;
  NodeContext context_;
  std::unique_ptr<kube::Informer> pods_;

  Mutex mu_;
  std::condition_variable_any stop_cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<PodWorker>> workers_ ABSL_GUARDED_BY(mu_);  // by pod uid
  std::set<ContainerProcess*> exec_processes_ ABSL_GUARDED_BY(mu_);                 // running execs
  std::thread heartbeat_;
};

}  // namespace canhazgpu::simkubelet
