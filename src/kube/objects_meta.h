// The parts every Kubernetes object shares: ObjectMeta (metadata) with its
// owner references, and the condition shape of metav1.Condition, PodCondition
// and NodeCondition. Each keeps the fields it does not model (json_object.h),
// so managedFields, selfLink and whatever a newer server adds pass through.
// Plain values; not thread-safe to mutate from two threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/json_object.h"

namespace canhazgpu::kube {

struct OwnerReference : JsonObject<OwnerReference> {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
};

struct ObjectMeta : JsonObject<ObjectMeta> {
  std::string name;
  std::string generate_name;
  std::string namespace_name;  // "namespace"
  std::string uid;
  std::string resource_version;
  std::optional<int64_t> generation;
  std::string creation_timestamp;  // RFC 3339, as the server wrote it
  std::string deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> owner_references;
};

// One struct for the condition types of Kubernetes: metav1.Condition (in a
// ResourceClaim's device status), PodCondition (lastProbeTime) and
// NodeCondition (lastHeartbeatTime). A field a kind lacks stays unset.
struct Condition : JsonObject<Condition> {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::optional<int64_t> observed_generation;
  std::string last_probe_time;
  std::string last_heartbeat_time;
  std::string last_transition_time;
  std::string reason;
  std::string message;
};

// Instantiated once, in objects_meta.cc: the other objects' .cc files see
// JsonObject's definitions but not these types' field lists.
extern template struct JsonObject<OwnerReference>;
extern template struct JsonObject<ObjectMeta>;
extern template struct JsonObject<Condition>;

}  // namespace canhazgpu::kube
