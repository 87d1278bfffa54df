// What the simulated cluster's workload controllers (ReplicaSet,
// Deployment, Job, DaemonSet) share: their objects as the informers list
// them, the pods a controller owns, pods made from a template, and the
// writes every controller makes, each recorded in the pass's view so the
// rest of the pass (the claim controller, the scheduler) sees it at once.
// Like kube-controller-manager's controllers, a controller owns the pods
// whose controller reference carries its uid; adopting orphans that match
// a selector is not emulated.
// Not thread-safe: the control plane's one loop thread calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "clusterview/view.h"
#include "core/clock.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "simcluster/overlay.h"

namespace canhazgpu::simcluster {

inline const kube::ResourceRef kDeployments{"apps", "v1", "deployments", true};
inline const kube::ResourceRef kReplicaSets{"apps", "v1", "replicasets", true};
inline const kube::ResourceRef kDaemonSets{"apps", "v1", "daemonsets", true};
using kube::kJobs;

// The workload objects of one pass, by "ns/name".
struct Workloads {
  std::map<std::string, nlohmann::json> deployments;
  std::map<std::string, nlohmann::json> replica_sets;
  std::map<std::string, nlohmann::json> jobs;
  std::map<std::string, nlohmann::json> daemon_sets;
};

// One workload kind in a pass: its API resource, what the control plane
// wrote of it that the informer has not brought yet, and the pass's objects
// of that kind, which every write updates.
struct KindInPass {
  const kube::ResourceRef* ref;
  Overlay* overlay;
  std::map<std::string, nlohmann::json>* objects;
};

// The integer at `pointer`, or `fallback` when it is absent or not an
// integer.
int64_t IntAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer,
              int64_t fallback);

// Neither done (Succeeded, Failed) nor being deleted: what counts toward a
// controller's replicas.
bool PodActive(const nlohmann::json& pod);
// The pod's Ready condition is True.
bool PodReady(const nlohmann::json& pod);
// Ready for at least `min_ready_seconds` by `now`.
bool PodAvailable(const nlohmann::json& pod, int64_t min_ready_seconds, TimePoint now);
// The objects of `objects` whose controller reference is `owner`.
std::vector<nlohmann::json> Controlled(const std::map<std::string, nlohmann::json>& objects,
                                       const nlohmann::json& owner);
// A short, stable hash of a pod template, in the alphabet the controllers
// use for names (no vowels, so no words): pod-template-hash and
// controller-revision-hash.
std::string TemplateHash(const nlohmann::json& pod_template);
// An int or a percentage of `total` (maxSurge, maxUnavailable), rounded up
// or down as the Deployment controller rounds each.
int64_t ScaledValue(const nlohmann::json& value, int64_t total, bool round_up);

// The writes of the workload controllers.
class WorkloadWriter {
 public:
  WorkloadWriter(kube::Client& client, Overlay& pods, const Clock& clock,
                 std::function<void(const std::string&)> log)
      : client_(client), pods_(pods), clock_(clock), log_(std::move(log)) {}

  const Clock& clock() const { return clock_; }

  // Forgets pods deleted earlier that the view no longer holds.
  void StartPass(const clusterview::View& view);
  // The pod a controller deleted and the informer still lists is not
  // active any more, for this controller's count.
  bool Deleting(const nlohmann::json& pod) const;

  // Creates a pod from `pod_template` (a PodTemplateSpec), controlled by
  // `owner` (of `owner_kind` in `owner_api_version`), named by
  // `generate_name`; `mutate` adjusts it before it is written. Records it
  // in view.pods. False (logged) when the write failed.
  bool CreatePod(clusterview::View& view, const nlohmann::json& owner,
                 const std::string& owner_api_version, const std::string& owner_kind,
                 const nlohmann::json& pod_template, const std::string& generate_name,
                 const std::function<void(nlohmann::json&)>& mutate = nullptr);
  // Deletes a pod gracefully, with a uid precondition.
  void DeletePod(const nlohmann::json& pod);

  // Writes `status` into `object` (of `kind`) unless it already holds it.
  void WriteStatus(const KindInPass& kind, const nlohmann::json& object,
                   const nlohmann::json& status);
  // Creates or updates an object of `kind` (a ReplicaSet). False (logged)
  // when the write failed.
  bool Create(const KindInPass& kind, const nlohmann::json& object);
  bool Update(const KindInPass& kind, const nlohmann::json& object);

  // Condition `type` set to `status`/`reason`/`message` in `conditions`;
  // an unchanged condition keeps its times, so a pass that finds nothing
  // new writes nothing. `update_time` is the kind's second time field
  // besides lastTransitionTime: lastUpdateTime (apps) or lastProbeTime
  // (Jobs).
  void SetCondition(nlohmann::json& conditions, const std::string& type, bool status,
                    const std::string& reason, const std::string& message,
                    const char* update_time = "lastUpdateTime") const;

  void Log(const std::string& line) const { log_(line); }

 private:
  kube::Client& client_;
  Overlay& pods_;
  const Clock& clock_;
  std::function<void(const std::string&)> log_;
  std::set<std::string> deleting_;  // uids of pods we deleted
};

}  // namespace canhazgpu::simcluster
