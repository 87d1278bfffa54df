// Typed objects of core/v1 (Pod, Node, Namespace, Event, ConfigMap) and
// coordination.k8s.io/v1 (Lease), modeled as far as our node driver and CLI
// read and write them: a pod's claims and containers, a node's conditions,
// the fields of an event, a config map's data, a lease's holder and times.
// Everything else (volumes, probes, a node's spec, container statuses...) is
// kept as read in each struct's `unknown` or as nlohmann::json, and written
// back unchanged (json_object.h). Times stay RFC 3339 strings and quantities
// stay strings. Plain values; not thread-safe to mutate from two threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/json_object.h"
#include "kube/objects_meta.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// --- Pod --------------------------------------------------------------------

// A container's use of one of the pod's claims (core/v1 ResourceClaim, named
// apart from resource.k8s.io's ResourceClaim).
struct ContainerResourceClaim : JsonObject<ContainerResourceClaim> {
  std::string name;     // a spec.resourceClaims[].name
  std::string request;  // empty: every request of the claim
};

struct ResourceRequirements : JsonObject<ResourceRequirements> {
  std::map<std::string, std::string> limits;    // quantities
  std::map<std::string, std::string> requests;  // quantities
  std::vector<ContainerResourceClaim> claims;
};

struct EnvVar : JsonObject<EnvVar> {
  std::string name;
  std::string value;
  nlohmann::json value_from;  // EnvVarSource
};

struct Container : JsonObject<Container> {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  ResourceRequirements resources;
};

struct PodResourceClaim : JsonObject<PodResourceClaim> {
  std::string name;
  std::string resource_claim_name;           // exactly one of these two
  std::string resource_claim_template_name;  // is set
};

struct PodSpec : JsonObject<PodSpec> {
  std::string node_name;
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  std::vector<PodResourceClaim> resource_claims;
  std::string restart_policy;  // Always, OnFailure, Never
  std::optional<int64_t> active_deadline_seconds;
  std::map<std::string, std::string> node_selector;
  std::string service_account_name;
};

// The name of the claim generated for a pod's resourceClaimTemplateName.
struct PodResourceClaimStatus : JsonObject<PodResourceClaimStatus> {
  std::string name;
  std::string resource_claim_name;
};

struct PodStatus : JsonObject<PodStatus> {
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  std::vector<Condition> conditions;
  std::string message;
  std::string reason;
  std::string start_time;
  nlohmann::json init_container_statuses;  // []ContainerStatus
  nlohmann::json container_statuses;       // []ContainerStatus
  std::vector<PodResourceClaimStatus> resource_claim_statuses;
};

struct Pod : JsonObject<Pod> {
  std::string api_version = "v1";
  std::string kind = "Pod";
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
};

// --- Node, Namespace --------------------------------------------------------

struct NodeStatus : JsonObject<NodeStatus> {
  std::map<std::string, std::string> capacity;     // quantities
  std::map<std::string, std::string> allocatable;  // quantities
  std::vector<Condition> conditions;
};

struct Node : JsonObject<Node> {
  std::string api_version = "v1";
  std::string kind = "Node";
  ObjectMeta metadata;  // labels: kubernetes.io/hostname, ...
  NodeStatus status;
};

struct NamespaceStatus : JsonObject<NamespaceStatus> {
  std::string phase;  // Active, Terminating
};

struct Namespace : JsonObject<Namespace> {
  std::string api_version = "v1";
  std::string kind = "Namespace";
  ObjectMeta metadata;
  NamespaceStatus status;
};

// --- Event ------------------------------------------------------------------

// core/v1 ObjectReference and EventSource, named for their place in an Event:
// main's kube/events.h already has a plain ObjectReference and EventSource
// (what EventRecorder takes) in this namespace.
struct EventObjectReference : JsonObject<EventObjectReference> {
  std::string api_version;
  std::string kind;
  std::string namespace_name;  // "namespace"
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string field_path;
};

struct EventReportingSource : JsonObject<EventReportingSource> {
  std::string component;
  std::string host;
};

// core/v1 Event, as kubectl describe shows them.
struct Event : JsonObject<Event> {
  std::string api_version = "v1";
  std::string kind = "Event";
  ObjectMeta metadata;
  EventObjectReference involved_object;
  std::string reason;
  std::string message;
  std::string type;  // Normal, Warning
  EventReportingSource source;
  std::optional<int64_t> count;
  std::string first_timestamp;
  std::string last_timestamp;
  std::string event_time;  // MicroTime: RFC 3339 with microseconds
  std::string action;
  std::string reporting_component;
  std::string reporting_instance;
};

// --- ConfigMap, Lease -------------------------------------------------------

struct ConfigMap : JsonObject<ConfigMap> {
  std::string api_version = "v1";
  std::string kind = "ConfigMap";
  ObjectMeta metadata;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // base64, as sent
  std::optional<bool> immutable;
};

struct LeaseSpec : JsonObject<LeaseSpec> {
  std::string holder_identity;
  std::optional<int64_t> lease_duration_seconds;
  std::string acquire_time;  // MicroTime
  std::string renew_time;    // MicroTime
  std::optional<int64_t> lease_transitions;
};

// coordination.k8s.io/v1 Lease: leader election and node heartbeats.
struct Lease : JsonObject<Lease> {
  std::string api_version = "coordination.k8s.io/v1";
  std::string kind = "Lease";
  ObjectMeta metadata;
  LeaseSpec spec;
};

}  // namespace canhazgpu::kube
