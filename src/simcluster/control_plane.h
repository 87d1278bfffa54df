// The control plane of the simulated cluster (`k8shazgpu-sim cluster`): the
// workload controllers (Deployments, ReplicaSets, Jobs, DaemonSets: their
// own headers), the scheduler stand-in (scheduler.h), the resourceclaim
// controller (claim_controller.h) and the garbage collector
// (garbage_collector.h) on one loop, fed by informers on pods, nodes,
// ResourceSlices, ResourceClaims, ResourceClaimTemplates, DeviceClasses,
// ConfigMaps and the four workload kinds (and PodGroups, with the
// GenericWorkload gate). Any change an informer hears
// wakes the loop, which then runs one pass: the workload controllers (a
// Deployment's new ReplicaSet gets its pods in the same pass), the claim
// controller, the scheduler over every pending pod, then the garbage
// collector over every watched object. A pass also
// runs every `resync` as a safety net; there is no faster polling.
//
// Threading: Start() starts the informers' threads and the loop thread;
// every decision and write happens on the loop thread, so two pods can never
// be given the same device, and what it wrote itself counts at once even
// before the informers deliver it (view.h). Stop() (or the destructor)
// ends and joins them all. Start/Stop are for one owning thread;
// WaitForPasses() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "clusterview/view.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "simcluster/claim_controller.h"
#include "simcluster/daemon_set_controller.h"
#include "simcluster/deployment_controller.h"
#include "simcluster/garbage_collector.h"
#include "simcluster/job_controller.h"
#include "simcluster/overlay.h"
#include "simcluster/replica_set_controller.h"
#include "simcluster/scheduler.h"
#include "simcluster/workload_pods.h"

namespace canhazgpu::simcluster {

struct ControlPlaneOptions {
  // Pods whose spec.schedulerName is this one (or empty) are ours.
  std::string scheduler_name = "default-scheduler";
  std::chrono::milliseconds resync{10'000};
  // How long Start() waits for the informers' first lists.
  std::chrono::milliseconds sync_timeout{30'000};
  const Clock* clock = nullptr;  // required: event and condition times
  // One line per failed write (a conflict is retried by the next pass).
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // The API server serves PodGroups (GenericWorkload): watch them, and
  // gang-schedule the pods that name one (scheduler.h).
  bool generic_workload = false;
};

class ControlPlane {
 public:
  // `client` must outlive the control plane. InvalidArgument without a
  // clock.
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Create(kube::Client& client,
                                                              ControlPlaneOptions options);
  ~ControlPlane();

  // Starts the informers, waits for their first lists (Unavailable when
  // they do not come within options.sync_timeout) and starts the loop.
  absl::Status Start();
  void Stop();

  // How many passes have run; waits until more than `after` have run or
  // the timeout passes, and returns the count.
  int64_t WaitForPasses(int64_t after, std::chrono::milliseconds timeout);

 private:
  ControlPlane(kube::Client& client, ControlPlaneOptions options);
  void Wake();
  void Loop();
  clusterview::View Snapshot();
  Workloads WorkloadSnapshot();
  // What the garbage collector looks at: every watched object, the pass's
  // own writes (in `view` and `workloads`) included.
  std::vector<WatchedObjects> Watched(const clusterview::View& view, const Workloads& workloads);
  // Every informer, for starting and stopping them together.
  std::vector<kube::Informer*> Informers();

  kube::Client& client_;
  const ControlPlaneOptions options_;
  Overlay pod_overlay_;
  Overlay claim_overlay_;
  Overlay deployment_overlay_, replica_set_overlay_, job_overlay_, daemon_set_overlay_;
  WorkloadWriter workload_writer_;
  DeploymentController deployments_controller_;
  ReplicaSetController replica_sets_controller_;
  JobController jobs_controller_;
  DaemonSetController daemon_sets_controller_;
  ClaimController controller_;
  Scheduler scheduler_;
  GarbageCollector garbage_collector_;
  std::unique_ptr<kube::Informer> pods_, nodes_, slices_, claims_, templates_, classes_,
      config_maps_, deployments_, replica_sets_, jobs_, daemon_sets_;
  std::unique_ptr<kube::Informer> pod_groups_;  // with generic_workload only

  Mutex mu_;
  std::condition_variable_any cv_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t passes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread loop_;
};

}  // namespace canhazgpu::simcluster
