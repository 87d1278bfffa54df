// The simulated API server's storage: every object of every kind, in memory,
// with a global resourceVersion, the status split, generations, finalizers,
// owner-reference garbage collection and a bounded window of watch events.
// It decides what a real API server decides about a write (409 on a stale
// resourceVersion, AlreadyExists, a missing namespace); api_server.cc only
// speaks HTTP. Thread-safe: one lock, and a condition variable for watchers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "kube/api_status.h"
#include "kubesim/resource_types.h"
#include "kubesim/selectors.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim {

// An object, or why not.
struct Outcome {
  std::optional<kube::ApiStatus> error;
  nlohmann::json object;

  bool ok() const { return !error.has_value(); }
};

struct ListOptions {
  LabelSelector labels;
  FieldSelector fields;
  int64_t limit = 0;  // 0: all
  std::string continue_token;
};

struct DeleteOptions {
  std::string propagation = "Background";  // Orphan, Background, Foreground
  std::string precondition_uid;
  std::string precondition_resource_version;
  // Pods only (as the real server: other kinds go at once). Unset: the pod's
  // spec.terminationGracePeriodSeconds, else 30.
  std::optional<int64_t> grace_period_seconds;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED
  int64_t resource_version = 0;
  std::string type_key;  // ResourceType::key()
  std::string namespace_name;
  nlohmann::json object;
};

class ObjectStore {
 public:
  // `event_window`: how many events a watch may resume across; older
  // resourceVersions are Gone (410), as after an etcd compaction.
  // `clock` stamps creationTimestamp and deletionTimestamp; it must outlive
  // the store.
  explicit ObjectStore(size_t event_window = 1000, const Clock& clock = DefaultClock());
  // The system's clock.
  static const Clock& DefaultClock();

  // "2026-11-23T22:10:00Z", now by the store's clock: Kubernetes' metav1.Time
  // (whole seconds, UTC).
  std::string Timestamp() const;
  const Clock& clock() const { return clock_; }

  // The kinds served now (CRDs come and go); copies, safe to keep.
  std::optional<ResourceType> FindType(const std::string& group, const std::string& version,
                                       const std::string& resource) const;
  std::vector<ResourceType> Types() const;

  // Writes are validated (validation.h); `strict` is fieldValidation=Strict:
  // unknown fields are an error instead of being dropped.
  Outcome Create(const ResourceType& type, const std::string& ns, nlohmann::json object,
                 bool strict = false);
  Outcome Get(const ResourceType& type, const std::string& ns, const std::string& name) const;
  // A List object (kind FooList) with metadata.resourceVersion and, when
  // `limit` cut it short, metadata.continue.
  Outcome List(const ResourceType& type, const std::string& ns, const ListOptions& options) const;
  // `status`: a write to the status subresource (only .status changes);
  // otherwise .status is kept for kinds that have the subresource.
  Outcome Update(const ResourceType& type, const std::string& ns, const std::string& name,
                 nlohmann::json object, bool status, bool strict = false);
  Outcome Delete(const ResourceType& type, const std::string& ns, const std::string& name,
                 const DeleteOptions& options);

  // pods/binding: assigns the pod to `binding`'s target node (spec.nodeName
  // and a PodScheduled condition), as the scheduler's bind does. The
  // Binding is validated against core/v1's schema like any write (`strict`:
  // fieldValidation=Strict). Conflict when the pod is already assigned or
  // being deleted.
  Outcome BindPod(const std::string& ns, const std::string& name, nlohmann::json binding,
                  bool strict = false);

  // The GenericWorkload feature gate (pod_groups.h): serves
  // scheduling.k8s.io/v1beta1 PodGroups and keeps pods' and pod templates'
  // spec.schedulingGroup. Off by default, as in Kubernetes 1.37.
  void EnableGenericWorkload();

  int64_t resource_version() const;
  void set_event_window(size_t events);
  // Whether deleting an owner in the background (the default propagation)
  // deletes its dependents here and now (true, the default: the server
  // alone, with nobody else to do it) or leaves them to a garbage collector
  // watching the API, as a real server leaves them to kube-controller-
  // manager (false: the simulated cluster, simcluster/garbage_collector.h).
  // Orphan and Foreground propagation stay the store's own either way.
  void set_collect_background_dependents(bool collect);

  // Appends to `out` the events of `type` (in `ns`, or every namespace when
  // empty) after `after`, waiting up to `wait` for the first. false when
  // `after` is older than the window (the caller answers 410 Gone). Returns
  // early, with no events, once `stop_waiting` holds: it is asked at every
  // wake-up.
  bool WaitForEvents(const ResourceType& type, const std::string& ns, int64_t after,
                     std::chrono::milliseconds wait, std::vector<WatchEvent>* out,
                     const std::function<bool()>& stop_waiting = nullptr) const;
  // Wakes every waiting watcher, to ask its stop_waiting (at shutdown, or
  // when watches are dropped).
  void WakeWatchers();

 private:
  using Key = std::string;  // type key, namespace and name, '\x1f'-separated
  static Key MakeKey(const std::string& type_key, const std::string& ns, const std::string& name);

  Outcome CreateLocked(const ResourceType& type, const std::string& ns, nlohmann::json object,
                       bool strict = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Outcome UpdateLocked(const ResourceType& type, const std::string& ns, const std::string& name,
                       nlohmann::json object, bool status, bool strict = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Outcome DeleteLocked(const ResourceType& type, const std::string& ns, const std::string& name,
                       const DeleteOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Check() with the feature gates' fields: what they add to 1.34's kinds
  // is held aside from the schema walk and checked on its own.
  std::optional<kube::ApiStatus> CheckWriteLocked(const ResourceType& type, nlohmann::json& object,
                                                  const nlohmann::json* old, bool strict) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The error a write of `object` gets, if any; prunes unknown fields.
  static std::optional<kube::ApiStatus> Check(const ResourceType& type, nlohmann::json& object,
                                              const nlohmann::json* old, bool strict);
  // A claim or claim template asking for admin access to devices in a
  // namespace without the label resource.kubernetes.io/admin-access: "true"
  // is refused, as 1.34 (DRAAdminAccess on by default) refuses it.
  std::optional<kube::ApiStatus> CheckAdminAccessLocked(const ResourceType& type,
                                                        const std::string& ns,
                                                        const nlohmann::json& object) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the object now: a DELETED event, then its dependents per policy.
  void RemoveLocked(const ResourceType& type, const Key& key, const std::string& policy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A pod on a node is deleted gracefully: marked with deletionTimestamp and
  // left for its kubelet to stop and remove. nullopt when it goes now.
  std::optional<Outcome> DeletePodGracefullyLocked(const ResourceType& type, nlohmann::json& pod,
                                                   const DeleteOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectDependentsLocked(const std::string& owner_uid, const std::string& policy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishForegroundDeletionsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordLocked(const std::string& event_type, const ResourceType& type,
                    const nlohmann::json& object) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const ResourceType* TypeOfKeyLocked(const Key& key) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RegisterCrdLocked(const nlohmann::json& crd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnregisterCrdLocked(const nlohmann::json& crd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  mutable Mutex mu_;
  mutable std::condition_variable_any changed_;
  ResourceTypes types_ ABSL_GUARDED_BY(mu_);
  std::map<Key, nlohmann::json> objects_ ABSL_GUARDED_BY(mu_);
  std::set<Key> foreground_
      ABSL_GUARDED_BY(mu_);  // owners waiting, in foreground deletion, for dependents
  int64_t resource_version_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  size_t event_window_ ABSL_GUARDED_BY(mu_);
  bool collect_background_dependents_ ABSL_GUARDED_BY(mu_) = true;
  bool generic_workload_ ABSL_GUARDED_BY(mu_) = false;
  int64_t oldest_resumable_ ABSL_GUARDED_BY(mu_) = 0;  // the newest event dropped from the window
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;       // bumped at every wake-up, so waiters notice
};

}  // namespace canhazgpu::kubesim
