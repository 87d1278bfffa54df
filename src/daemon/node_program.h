// k8shazgpu-node as a whole: the real parts built from settings and started
// together (the Kubernetes clients, the host store, the GPU provider and its
// health monitor, the node daemon, the cache agent, and /healthz, /readyz
// and /metrics on the dashboard's HTTP front), so that
// cli/k8shazgpu_node/main.cc only reads its flags and waits for a signal.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/log.h"
#include "driver/shared_gpus.h"

namespace canhazgpu::daemon {

struct NodeCacheSettings {
  bool enabled = false;
  std::string root;
  int64_t disk_limit_bytes = 0;  // 0: no ceiling
  std::string disk_limit_text;   // as given, for the log line
  Duration pull_deadline = std::chrono::hours(6);
  int workers = 2;
  std::string runtime_endpoint;  // empty: the first of the usual sockets
  std::string hf_endpoint;
  std::vector<std::string> secret_namespaces;
  bool allow_local_git = false;
  bool allow_plain_http_to_loopback = false;
};

struct NodeProgramSettings {
  std::string node_name;
  std::string kubeconfig;  // empty: in-cluster, then kubectl's rules
  std::string state_path;
  std::string provider;  // nvidia, amd or fake
  std::string fake_host;
  std::string nvml_library;
  std::string plugin_dir;
  std::string registrar_dir;
  std::string cdi_dir;
  std::string driver_root;
  std::string mig_minors_path;
  driver::SharingOptions sharing;  // --gpu-sharing, --gpu-reserved-memory
  std::string http_host;
  int http_port = 8081;
  Duration resync = std::chrono::seconds(30);
  double api_qps = 20;
  int api_burst = 50;
  NodeCacheSettings cache;
  std::function<void()> before_prepare_completed;  // tests only
  Log log;
};

class NodeProgram {
 public:
  // Everything runs when this returns; a part that cannot start is the
  // error, and nothing is left running.
  static absl::StatusOr<std::unique_ptr<NodeProgram>> Start(NodeProgramSettings settings);
  ~NodeProgram();  // Stop()

  // Stops the cache agent, the daemon, the health monitor and the front,
  // in that order. Idempotent.
  void Stop();
  int http_port() const;

 private:
  struct Parts;
  explicit NodeProgram(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace canhazgpu::daemon
