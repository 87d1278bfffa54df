// k8shazgpu-node's moving parts, started in order and stopped in reverse:
// the checkpoint (restoring prepared claims' CDI specs, rolling back
// half-done ones), the ResourceSlices kept equal to the node's devices, the
// kubelet plugin (registration, DRA and health services), metrics. The
// slices follow the host store: a commit to the state file (inotify, no
// slow poll), a health change or the periodic resync republishes them, and
// only what changed is written. A refused prepare (on its ResourceClaim) and
// a corrupt checkpoint moved aside (on the Node) are Warning Events, sent
// from a queue of their own so that they never delay or fail a prepare.
// Only main.cc builds the real parts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "driver/api_claim_source.h"
#include "driver/checkpoint.h"
#include "driver/claim_preparer.h"
#include "driver/claim_status_reporter.h"
#include "driver/health_board.h"
#include "driver/node_status.h"
#include "driver/node_view.h"
#include "driver/slice_publisher.h"
#include "host/mig_minors.h"
#include "kube/client.h"
#include "kube/event_queue.h"
#include "kube/events.h"
#include "kubeletplugin/plugin_server.h"
#include "metrics/registry.h"
#include "mps/mps_daemons.h"

namespace canhazgpu::daemon {

struct NodeDaemonOptions {
  std::string state_path;  // the host store's file, watched for commits
  std::string plugin_dir = std::string("/var/lib/kubelet/plugins/") + kubeletplugin::kDriverName;
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";
  std::string cdi_dir = "/var/run/cdi";
  std::string driver_root = "/";
  std::string mig_minors_path = host::kMigMinorsPath;
  std::vector<std::string> toolkit_spec_dirs = {"/etc/cdi", "/var/run/cdi"};
  std::string boot_id;
  // Where the MPS daemons of shared GPUs keep their pipe and log directories
  // and share records (--gpu-sharing=memory); keep it short, MPS puts unix
  // sockets below it. Empty: beside state_path, in "mps".
  std::string mps_state_dir;
  std::chrono::milliseconds resync = std::chrono::seconds(30);
  // Test-only (PreparerOptions::before_prepare_completed).
  std::function<void()> before_prepare_completed;
  // One line per event worth a person's attention.
  Log log;
};

class NodeDaemon {
 public:
  // Everything in `parts`, `client` and `clock` must outlive the daemon.
  static absl::StatusOr<std::unique_ptr<NodeDaemon>> Start(NodeDaemonOptions options,
                                                           driver::NodeParts parts,
                                                           kube::Client& client,
                                                           const Clock& clock);
  ~NodeDaemon();
  NodeDaemon(const NodeDaemon&) = delete;
  NodeDaemon& operator=(const NodeDaemon&) = delete;

  // Stops the slice loop and the plugin server (its sockets removed).
  void Stop();
  // Slices published at least once and the plugin serving.
  bool Ready() const { return ready_; }
  std::string Metrics() const { return metrics_.Render(); }

 private:
  NodeDaemon(NodeDaemonOptions options, driver::NodeParts parts, kube::Client& client,
             const Clock& clock);
  // The MPS daemons (when sharing), the preparer with the checkpoint's
  // claims restored, and the reporter of their device status.
  void StartPreparer(kube::Client& client);
  void SliceLoop();
  // Reads the node and publishes; logs what changed or failed. `verify`
  // reads the API even when the devices did not change (the resync).
  void SyncSlices(bool verify);
  // Puts back the K8S reservations of prepared claims that the host store
  // lost, logging each; a GPU someone else holds now is logged and a
  // Warning Event on the claim, when new and at every resync (`resync`).
  void ReassertReservations(bool resync);
  // Writes the NodeGpuStatus SyncSlices left pending, unless one was
  // written less than kStatusInterval ago (then the loop comes back), or
  // `now_anyway` (the resync).
  void WritePendingStatus(bool now_anyway);
  driver::NodeDevices Devices();
  // Hands what every prepared claim's status.devices should say to the
  // reporter (which writes what changed, from its own thread).
  void ReportClaimStatuses();
  // Logs once that `devices` has GPUs whose host offers mps-dmem, published
  // as mps because a pod's share gets MPS's limits only.
  void NoteDmemNotApplied(const driver::NodeDevices& devices);

  const NodeDaemonOptions options_;
  const driver::NodeParts parts_;
  const Clock& clock_;
  metrics::MetricsRegistry metrics_;
  metrics::Metric& prepares_;
  metrics::Metric& published_devices_;
  metrics::Metric& publish_errors_;
  metrics::Metric& publishes_;
  metrics::Metric& claim_seconds_;

  kube::EventRecorder recorder_;
  kube::EventQueue events_;
  std::optional<driver::Checkpoint> checkpoint_;
  driver::ApiClaimSource claims_;
  driver::SlicePublisher publisher_;
  driver::NodeStatusWriter status_writer_;
  // Only the slice loop's thread touches these four.
  std::map<std::string, std::string> reported_problems_;  // claim uid -> last said
  std::optional<kube::NodeGpuStatus> pending_status_;
  MonoTime status_written_at_{};
  // Said once: the host offers dmem, which pods' shares do not get.
  bool dmem_note_logged_ = false;
  driver::HealthBoard health_board_;
  std::unique_ptr<mps::MpsDaemons> mps_;  // when the node shares GPUs
  std::unique_ptr<driver::ClaimPreparer> preparer_;
  std::unique_ptr<driver::ClaimStatusReporter> claim_status_;
  std::unique_ptr<driver::NodeService> metered_;  // the preparer, counted and timed
  std::unique_ptr<kubeletplugin::PluginServer> plugin_;

  Mutex mu_;  // devices_, node_uid_
  driver::NodeDevices devices_ ABSL_GUARDED_BY(mu_);
  std::string node_uid_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::thread slice_thread_;
};

}  // namespace canhazgpu::daemon
