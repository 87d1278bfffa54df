// One pod on the simulated node, from binding to removal, on its own
// thread — the kubelet's pod worker: makes the pod's volumes and prepares
// its claims (each retrying with a Warning event while that fails), gives
// it its address and hosts file on the cluster's pod network (pod_network.h),
// runs its init containers one
// after another and then its containers side by side as local processes,
// restarts them as restartPolicy says (with the crash-loop back-off),
// enforces activeDeadlineSeconds, reports everything in pods/status, and
// unprepares the claims as soon as the pod has finished. On graceful
// deletion it stops the containers (SIGTERM, SIGKILL after the grace
// period), unprepares, removes the pod's volumes and the pod (grace period
// 0).
//
// Threading: Update(), Removed() and Stop() may be called from any thread
// (the informer's); all the work happens on the worker's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kubesim/pod_logs.h"
#include "nlohmann/json.hpp"
#include "simkubelet/container_process.h"
#include "simkubelet/device_health.h"
#include "simkubelet/mount_paths.h"
#include "simkubelet/pod_claims.h"
#include "simkubelet/pod_network.h"
#include "simkubelet/pod_sandbox.h"
#include "simkubelet/pod_status.h"
#include "simkubelet/pod_volumes.h"

namespace canhazgpu::simkubelet {

// What every pod worker of one kubelet shares; owned by the Kubelet.
struct NodeContext {
  kube::Client& client;
  kubesim::PodLogs& logs;
  kube::EventRecorder& events;
  DraManager& dra;
  const DeviceHealthCache& health;
  const Clock& clock;
  std::string node_name;
  std::string host_ip;
  std::string cdi_dir;
  std::string pods_dir;
  std::string root_dir;  // the node's root filesystem stand-in; "" = /
  std::chrono::milliseconds prepare_retry;
  std::chrono::milliseconds restart_backoff_initial;
  std::chrono::milliseconds restart_backoff_max;
  std::function<void(const std::string&)> log;
  // The cluster's; null: pods on the host network (podIP = host_ip, the
  // machine's /etc/hosts).
  PodNetwork* network = nullptr;
};

class PodWorker {
 public:
  PodWorker(NodeContext& node, nlohmann::json pod);
  ~PodWorker();
  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;

  // A newer version of the pod (deletionTimestamp is what matters).
  void Update(nlohmann::json pod);
  // The pod is gone from the API without a graceful deletion seen.
  void Removed();
  // The health of some device changed: the status is written again.
  void HealthChanged();
  // The kubelet stops: containers are killed at once, claims stay prepared
  // (as the real kubelet leaves them across its restarts); joins.
  void Stop();
  // True once the pod was removed and everything for it is done.
  bool Finished() const;

  // What a command run in the running container `name` gets (`kubectl
  // exec`): its environment, work directory and mounts, as its process got
  // them. FailedPrecondition when the container is not running, NotFound
  // when the pod has no such container.
  struct ExecContext {
    ProcessSpec process;  // argv empty
    std::vector<MountPoint> mounts;
  };
  absl::StatusOr<ExecContext> ExecContextOf(const std::string& container) const;
  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }

 private:
  struct Slot {  // one container's current run
    bool init = false;
    size_t index = 0;
    std::unique_ptr<ContainerProcess> process;
    std::optional<ProcessExit> exit;  // set by the process thread; guarded by mu_
    bool exit_handled = false;
    bool attempted = false;  // a start was tried
    int runs = 0;            // processes started (or failing to start) so far
    std::optional<std::chrono::steady_clock::time_point> restart_at;
    std::chrono::milliseconds backoff{0};
  };

  void Run();
  // Waits until something happened or `until`; true unless stopping.
  void WaitForWork(std::optional<std::chrono::steady_clock::time_point> until);
  bool Stopping();
  bool DeletionRequested();
  nlohmann::json Pod();

  std::string PodDir() const;  // <pods_dir>/<ns>_<pod>_<uid>
  bool MountVolumes();
  bool PrepareClaims();
  // An address and a hosts file on the pod network (retrying with a
  // Warning event while there is no free address); the host's for a
  // hostNetwork pod or a kubelet without a network. False when the pod
  // goes first.
  bool JoinNetwork();
  // Gives the address back (idempotent): the pod finished or is gone.
  void LeaveNetwork();
  // One pass over the containers of a pod that is not finished: handles
  // exits, restarts that are due and the active deadline, starts what may
  // start now and writes the status. True when the pod has finished.
  bool AdvancePod(std::optional<std::chrono::steady_clock::time_point> deadline);
  void StartContainer(Slot& slot);
  // A new run of `slot`: the ended process is joined, its exit forgotten,
  // and the container's log starts (or restarts).
  void BeginRun(Slot& slot);
  // Starts the process of `slot`'s container: its output goes to the
  // container's log, and its exit wakes the worker.
  absl::StatusOr<std::unique_ptr<ContainerProcess>> StartProcess(Slot& slot, ProcessSpec spec);
  void HandleExit(Slot& slot, const ProcessExit& exit, const std::string& reason = "");
  // The exit a process thread reported for `slot` and nobody handled yet,
  // marked handled; nullopt otherwise.
  std::optional<ProcessExit> TakeUnhandledExit(Slot& slot);
  void RetryLater(Slot& slot);
  // Stops every running container: SIGTERM, SIGKILL after `grace`.
  void KillAll(std::chrono::milliseconds grace, const std::string& reason);
  std::chrono::milliseconds GracePeriod();
  void Finalize();  // terminal: unprepare (retrying) and write the status
  void TerminateAndRemove();
  void WriteStatus();
  void Event(const std::string& type, const std::string& reason, const std::string& message);
  std::string Now() const;
  ContainerRecord& Record(const Slot& slot);
  const nlohmann::json& Spec(const Slot& slot);

  NodeContext& node_;
  const std::string ns_;
  const std::string name_;
  const std::string uid_;
  const nlohmann::json spec_;  // as bound; a pod's spec does not change
  std::string restart_policy_;
  PodRecord record_;
  VolumePaths volumes_;
  std::vector<PreparedClaim> prepared_;
  PodSandbox sandbox_;                        // its containers' hosts file and hostname
  bool on_network_ = false;                   // holds an address of node_.network
  std::vector<std::unique_ptr<Slot>> slots_;  // init containers first
  nlohmann::json last_written_;

  mutable Mutex mu_;
  std::condition_variable_any wake_;
  nlohmann::json pod_ ABSL_GUARDED_BY(mu_);                          // the newest version
  std::map<std::string, ExecContext> running_ ABSL_GUARDED_BY(mu_);  // by container name
  bool removed_ ABSL_GUARDED_BY(mu_) = false;
  bool health_changed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace canhazgpu::simkubelet
