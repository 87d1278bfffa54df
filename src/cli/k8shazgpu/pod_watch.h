// Follows one run's pod through informers (list + watch, no polling): the
// pod itself, the other runs' pods that wait for GPUs (for its place in
// line) and the events about it (the driver's prepare errors). Waits are
// bounded by the caller's predicate, a timeout, or an interrupt. Thread-
// safe: the informers' threads only record and notify; everything else
// runs on the caller's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "core/mutex.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Where a pending run stands in line: 1-based, of `of` pending runs.
struct QueuePlace {
  int position = 0;
  int of = 0;
};

// The pending runs (pods with the run label and no node, not being
// deleted) by creationTimestamp, then namespace/name; where `pod` is.
QueuePlace PlaceInLine(const std::vector<nlohmann::json>& runs, const nlohmann::json& pod);

class PodWatch {
 public:
  // `all_namespaces`: the line is the whole cluster's (needs a cluster-wide
  // list permission); otherwise the namespace's.
  PodWatch(kube::Client& client, std::string ns, std::string pod, bool all_namespaces);
  ~PodWatch();

  // Starts the informers and waits (bounded) for their first lists.
  absl::Status Start(std::chrono::milliseconds timeout);

  // The pod as last seen; nullopt when it is gone (or not seen yet).
  std::optional<nlohmann::json> Pod() const;
  // Whether the pod was seen and then deleted.
  bool Deleted() const;
  QueuePlace Place() const;
  // The last FailedPrepareDynamicResources event's message, or "".
  std::string PrepareError() const;

  // Waits until something changed since the last call, `timeout` passed,
  // or `cancel` turned true (checked every 100 ms); true if changed.
  bool WaitForChange(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel);

 private:
  void Changed();

  kube::Client& client_;
  const std::string ns_;
  const std::string pod_;
  const bool all_namespaces_;
  std::unique_ptr<kube::Informer> runs_;
  std::unique_ptr<kube::Informer> events_;
  mutable Mutex mu_;
  std::condition_variable_any changed_cv_;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t seen_changes_ ABSL_GUARDED_BY(mu_) = 0;
  bool deleted_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace canhazgpu::cli::k8s
