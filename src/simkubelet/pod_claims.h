// The kubelet's DRA manager: prepares a pod's ResourceClaims with their
// drivers before its containers start, and unprepares them when it is done.
// For each of the pod's claims it resolves the claim's name (a template's
// from status.resourceClaimStatuses), reads the claim, checks that it is
// allocated and reserved for the pod, and calls NodePrepareResources on each
// driver of the allocation — once per claim, however many pods on the node
// share it; NodeUnprepareResources once the last of them is done. Errors are
// worded as the kubelet's, to follow "Failed to prepare dynamic resources: "
// in a FailedPrepareDynamicResources event, the driver's message verbatim.
//
// State lives in memory only. The real kubelet checkpoints it and, after a
// restart, unprepares the claims of pods that are gone; this one forgets.
// Threading: thread-safe; calls to the drivers are made one at a time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "driver/node_service.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "simkubelet/device_health.h"
#include "simkubelet/plugin_watcher.h"

namespace canhazgpu::simkubelet {

struct ClaimDevice {
  std::string driver;
  driver::PreparedDevice device;
};

// One claim of a pod, prepared.
struct PreparedClaim {
  std::string pod_claim_name;  // spec.resourceClaims[].name
  driver::ClaimRef claim;
  std::vector<ClaimDevice> devices;  // of every driver
};

// The CDI ids a container gets: those of the devices of the claims its
// resources.claims name (and of the request, when it names one).
std::vector<std::string> CdiIdsForContainer(const nlohmann::json& container,
                                            const std::vector<PreparedClaim>& prepared);

// The container's status.allocatedResourcesStatus (Kubernetes 1.36): for
// each claim it uses, "claim:<name>/<request>" with every device of that
// request as "<driver>/<pool>/<device>" and its health from `health`.
nlohmann::json AllocatedResourcesStatus(const nlohmann::json& container,
                                        const std::vector<PreparedClaim>& prepared,
                                        const DeviceHealthCache& health);

class DraManager {
 public:
  DraManager(kube::Client& client, const PluginWatcher& plugins);

  // Prepares every claim of `pod` (a Pod as read from the API). Error
  // messages start "prepare dynamic resources: ", as the kubelet's.
  absl::StatusOr<std::vector<PreparedClaim>> PrepareResources(const nlohmann::json& pod);
  // Unprepares the claims prepared for the pod that no other pod uses. OK
  // when it had none; an error leaves the failed claims to the next call.
  absl::Status UnprepareResources(const std::string& pod_uid);

 private:
  struct ClaimInfo {
    driver::ClaimRef ref;
    std::set<std::string> drivers;
    std::set<std::string> pod_uids;
    std::vector<ClaimDevice> devices;
    bool prepared = false;
  };

  kube::Client& client_;
  const PluginWatcher& plugins_;
  Mutex mu_;                                                      // held across driver calls
  std::map<std::string, ClaimInfo> claims_ ABSL_GUARDED_BY(mu_);  // by claim uid
  std::map<std::string, std::set<std::string>> pod_claims_
      ABSL_GUARDED_BY(mu_);  // pod uid -> claim uids
};

}  // namespace canhazgpu::simkubelet
