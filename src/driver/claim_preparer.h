// The node driver's NodeService: prepares claims for the kubelet. Per claim:
// read the ResourceClaim, take the devices our driver was allocated on this
// node, refuse — in words the pod's owner can act on — a device that is
// gone, tainted (and not tolerated) or prepared for another claim, record
// PrepareStarted, reserve its GPUs in the host store as a K8S reservation
// (one transaction: a local `canhazgpu reserve` racing us for a GPU either
// wins, and the prepare says who holds it, or loses), write its CDI spec,
// record PrepareCompleted and return the CDI device ids. Unprepare undoes it
// from local state alone (the checkpoint and the store). Both are
// idempotent, and both refuse a request whose uid was prepared for a claim
// of another namespace or name. Claims and pods are read outside the lock,
// each read bounded by the call's deadline; the store, the checkpoint and
// the CDI directory change under one lock, with no API request under it, so
// different claims prepare concurrently except for those few milliseconds
// and a hung API server never delays an unprepare.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "driver/cdi_spec.h"
#include "driver/checkpoint.h"
#include "driver/claim_allocation.h"
#include "driver/node_service.h"
#include "driver/slices.h"
#include "host/mig_minors.h"
#include "kube/objects_resource.h"
#include "mps/mps_daemons.h"
#include "store/state_store.h"

namespace canhazgpu::driver {

// Where claims (and who they are for) come from: an informer's cache with a
// fallback read from the API server. A read that needs the API server gives
// up at `deadline`.
class ClaimSource {
 public:
  using Deadline = MonoTime;  // on RealClock(), as the kubelet's
  virtual ~ClaimSource() = default;
  // The claim the kubelet names: `uid` tells a cached copy of a claim that
  // was deleted and created again under the same name from the one asked for.
  virtual absl::StatusOr<kube::ResourceClaim> GetClaim(const std::string& ns,
                                                       const std::string& name,
                                                       const std::string& uid,
                                                       Deadline deadline) = 0;
  // The pod's canhazgpu.dev/user label; "" when unknown (or not known by
  // `deadline`).
  virtual std::string UserOfPod(const std::string& ns, const std::string& pod,
                                Deadline deadline) = 0;
};

// A prepared claim whose K8S reservations the host store had lost.
struct LostReservation {
  ClaimRef claim;
  std::vector<int> restored;  // GPUs reserved for it again
  // Who holds the others now: two owners of one GPU ("" when none).
  std::string conflicts;
  // Why the store could not be asked (a new state file whose pool is not
  // set yet, say); "" when it could.
  std::string error;
};

struct PreparerOptions {
  std::string driver = "gpu.canhazgpu.dev";
  std::string cdi_dir = "/var/run/cdi";
  // Where the NVIDIA Container Toolkit's spec may be.
  std::vector<std::string> toolkit_spec_dirs = {"/etc/cdi", "/var/run/cdi"};
  // The host's root as this process sees it, for the driver's libraries.
  std::string driver_root = "/";
  // Where the NVIDIA driver lists MIG capability minors (host/mig_minors.h).
  std::string mig_minors_path = host::kMigMinorsPath;
  // How long a prepare waits for the pod's user label. It only names who is
  // behind the pod ("k8s:<namespace>" without it), so a slow API server
  // does not get to hold the prepare for the rest of the kubelet's deadline.
  std::chrono::milliseconds pod_lookup_timeout{5'000};
  // The node's MPS control daemons, one per shared GPU (--gpu-sharing=memory):
  // a share whose GPU's isolation is mps or mps-dmem acquires its GPU's
  // daemon when prepared and releases it when unprepared. nullptr: the node
  // does not share GPUs. Must outlive the preparer.
  mps::MpsDaemons* mps = nullptr;
  // Test-only: called between the two checkpoint phases of a prepare (the
  // end-to-end tests crash the daemon there). Unset in production.
  std::function<void()> before_prepare_completed;
};

class ClaimPreparer : public NodeService {
 public:
  // `devices` returns the node's devices and taints now (the same view the
  // slices are built from). Everything passed must outlive the preparer.
  ClaimPreparer(PreparerOptions options, ClaimSource& claims, std::function<NodeDevices()> devices,
                store::StateStore& store, Checkpoint& checkpoint, const Clock& clock);

  std::map<std::string, PrepareResult> PrepareClaims(const std::vector<ClaimRef>& claims,
                                                     const CallBounds& bounds) override;
  std::map<std::string, std::string> UnprepareClaims(const std::vector<ClaimRef>& claims,
                                                     const CallBounds& bounds) override;

  // At start: removes the temporary files of spec writes a killed daemon
  // left, rewrites the CDI spec of every completed claim (the kubelet does
  // not prepare running pods again) and rolls back those whose prepare never
  // completed. Returns one line per claim it could not restore (and per
  // leftover it could not remove).
  std::vector<std::string> Restore();

  // Makes the host store agree with the checkpoint, the daemon's truth:
  // every GPU of a completed claim is reserved for it again where the store
  // lost that (`canhazgpu admin --force --drop-pod-reservations`, a state
  // file deleted and made again), unless someone else holds it now, which
  // is reported, not taken. Returns a line per claim it found short; none
  // when the store agrees. One store transaction per claim, under the lock.
  std::vector<LostReservation> ReassertReservations();

  // The claims prepared to completion now, by uid (what the node reports
  // in their status.devices).
  std::map<std::string, CheckpointClaim> CompletedClaims();

 private:
  absl::StatusOr<std::vector<PreparedDevice>> Prepare(const ClaimRef& ref,
                                                      const CallBounds& bounds);
  absl::Status Unprepare(const ClaimRef& ref);
  // The first canhazgpu.dev/user label among `pods`, "" when none has one
  // or the API server does not say in time.
  std::string UserOf(const std::string& ns, const std::vector<std::string>& pods,
                     ClaimSource::Deadline deadline);
  // Under mu_: the work after the claim (and its user) was read, against
  // `node` as the allocation was checked. No API request: mu_ is also what
  // an unprepare waits for.
  absl::StatusOr<std::vector<PreparedDevice>> PrepareLocked(const ClaimRef& ref,
                                                            const ClaimAllocation& allocation,
                                                            const NodeDevices& node,
                                                            const std::string& user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteSpec(const CheckpointClaim& claim, const NodeDevices& node);
  // A share's environment and mounts under MPS: its GPU's daemon acquired
  // (started on the first share), nothing for isolation none.
  absl::Status AddMps(const CheckpointDevice& d, const dra::Device& device, CdiDevice& cdi);
  // Releases the MPS shares of the claim `uid` recorded in the checkpoint.
  absl::Status ReleaseMpsLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A MIG device's capability device nodes; `minors` is read on first use.
  absl::StatusOr<std::vector<std::string>> MigNodes(const dra::Device& device, int gpu_minor,
                                                    std::optional<host::MigMinors>& minors) const;
  // Undoes the spec, the reservation and the record of `uid`, each whatever
  // happened to the others; the errors of those that failed, joined.
  absl::Status RollBackLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RollBackLocked, and `failure` for claim `id` with what it could not undo.
  absl::Status FailedAfterReserving(const std::string& id, const std::string& uid,
                                    const absl::Status& failure) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PreparerOptions options_;
  ClaimSource& claims_;
  const std::function<NodeDevices()> devices_;
  store::StateStore& store_;
  Checkpoint& checkpoint_;
  const Clock& clock_;
  Mutex mu_;
};

// The answer to the kubelet for a completed claim.
std::vector<PreparedDevice> PreparedDevicesOf(const CheckpointClaim& claim);

}  // namespace canhazgpu::driver
