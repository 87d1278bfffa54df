// Typed NodeGpuStatus (canhazgpu.dev/v1alpha1, deploy/crds/nodegpustatuses.yaml):
// what every GPU of one node is doing, as the node's k8shazgpu-node sees it.
// driver/node_status.cc writes it; clusterview/ reads it for `k8shazgpu
// status` and the explanations. It sits here, beside the Kubernetes kinds,
// because its writer (driver/) and its readers (clusterview/) share no
// folder above kube/. Like every typed object it keeps what it does not
// model (json_object.h). Plain values; not thread-safe to mutate from two
// threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kube/json_object.h"
#include "kube/objects_meta.h"

namespace canhazgpu::kube {

inline constexpr char kCanhazgpuApiVersion[] = "canhazgpu.dev/v1alpha1";

struct NodeGpuStatusSpec : JsonObject<NodeGpuStatusSpec> {
  std::string node_name;  // also the object's name
};

// Devices per state; a tainted device is also counted in its other state.
// The writer sets every count, zeros included.
struct NodeGpuSummary : JsonObject<NodeGpuSummary> {
  std::optional<int64_t> total;
  std::optional<int64_t> free;
  std::optional<int64_t> held;
  std::optional<int64_t> prepared;
  // GPUs shared by memory that have shares (pods' or local users'), each
  // once, whoever holds them; not also counted as held or prepared.
  std::optional<int64_t> shared;
  std::optional<int64_t> in_use;  // "inUse"
  std::optional<int64_t> tainted;
  std::optional<int64_t> mig;  // MIG instances; the counts above are of whole GPUs
};

// The local reservation of a Held device.
struct NodeGpuHold : JsonObject<NodeGpuHold> {
  std::string user;
  std::string kind;   // Manual, Run
  std::string since;  // RFC 3339
  std::string until;  // RFC 3339; absent for a run reservation
};

// A ResourceClaim a Prepared device is prepared for, or that holds a share
// of a Shared one.
struct NodeGpuClaim : JsonObject<NodeGpuClaim> {
  std::string namespace_name;  // "namespace"
  std::string name;
  std::optional<std::string> uid;  // written even when empty
  std::vector<std::string> pods;
  std::string share_id;  // "shareID": the claim's share of a Shared GPU
  std::string memory;    // the share's memory, a quantity ("10Gi")
};

// A local user's share of a Shared GPU (canhazgpu reserve/run --gpu-mem).
struct NodeGpuLocalShare : JsonObject<NodeGpuLocalShare> {
  std::string share_id;  // "shareID"
  std::string user;
  std::string kind;    // Manual, Run
  std::string memory;  // a quantity
  std::string since;   // RFC 3339
  std::string until;   // RFC 3339; absent for a run
};

// A GPU the node shares by memory (k8shazgpu-node --gpu-sharing=memory).
struct NodeGpuSharing : JsonObject<NodeGpuSharing> {
  std::string shareable_memory;  // "shareableMemory": its memory less the reserved margin
  std::string free_memory;       // "freeMemory": what no share holds
  std::string memory_isolation;  // "memoryIsolation": what a pod's share gets
  std::vector<NodeGpuLocalShare> local_shares;  // "localShares"
};

// What a local user waiting in the host's canhazgpu queue keeps of a device
// from the cluster (driver/host_queue.h): the whole GPU, or memory for a
// waiting share.
struct NodeGpuQueueKeep : JsonObject<NodeGpuQueueKeep> {
  std::string user;
  std::string memory;  // a quantity; absent when the whole GPU is kept
  std::string since;   // RFC 3339: when it queued
};

struct NodeGpuProcess : JsonObject<NodeGpuProcess> {
  std::optional<int64_t> pid;
  std::optional<std::string> user;     // written even when empty
  std::optional<std::string> command;  // written even when empty
  std::optional<int64_t> memory_bytes;
};

// What really runs on the device, whatever its state.
struct NodeGpuUsage : JsonObject<NodeGpuUsage> {
  std::optional<int64_t> memory_used_bytes;
  std::vector<std::string> users;
  std::vector<NodeGpuProcess> processes;
};

struct NodeGpuTaint : JsonObject<NodeGpuTaint> {
  std::string key;
  std::string value;
  std::string effect;  // None, NoSchedule, NoExecute
  std::string reason;  // a sentence for people
  std::string source;  // Driver, DeviceTaintRule
};

// One GPU or MIG instance.
struct NodeGpuDevice : JsonObject<NodeGpuDevice> {
  std::string name;  // as in the node's ResourceSlice
  std::string type;  // gpu, mig
  std::string uuid;
  std::optional<int64_t> index;
  std::string product_name;
  std::string state;                      // Free, Held, Prepared, Shared, InUse
  std::optional<NodeGpuHold> held;        // when Held
  std::vector<NodeGpuClaim> claims;       // when Prepared; the claims' shares when Shared
  std::optional<NodeGpuSharing> sharing;  // a GPU shared by memory, whatever its state
  // "keptFor": local waiters it is kept for; a device kept whole is not in
  // the slice, kept memory is not in its published capacity.
  std::vector<NodeGpuQueueKeep> kept_for;
  std::optional<NodeGpuUsage> usage;
  std::vector<NodeGpuTaint> taints;
};

// The status of a NodeGpuStatus (named as a generated Go type would be).
struct NodeGpuStatusStatus : JsonObject<NodeGpuStatusStatus> {
  std::string update_time;  // RFC 3339; old means the daemon is gone
  std::string driver_version;
  NodeGpuSummary summary;
  std::vector<NodeGpuDevice> devices;  // in ResourceSlice order

  // The device named `name`, or null.
  const NodeGpuDevice* Find(const std::string& name) const;
};

struct NodeGpuStatus : JsonObject<NodeGpuStatus> {
  std::string api_version = kCanhazgpuApiVersion;
  std::string kind = "NodeGpuStatus";
  ObjectMeta metadata;  // named after the node, owned by it
  NodeGpuStatusSpec spec;
  NodeGpuStatusStatus status;

  // spec.nodeName, or metadata.name when that is missing.
  const std::string& NodeName() const;
};

extern template struct JsonObject<NodeGpuStatusSpec>;
extern template struct JsonObject<NodeGpuSummary>;
extern template struct JsonObject<NodeGpuHold>;
extern template struct JsonObject<NodeGpuClaim>;
extern template struct JsonObject<NodeGpuLocalShare>;
extern template struct JsonObject<NodeGpuSharing>;
extern template struct JsonObject<NodeGpuQueueKeep>;
extern template struct JsonObject<NodeGpuProcess>;
extern template struct JsonObject<NodeGpuUsage>;
extern template struct JsonObject<NodeGpuTaint>;
extern template struct JsonObject<NodeGpuDevice>;
extern template struct JsonObject<NodeGpuStatusStatus>;
extern template struct JsonObject<NodeGpuStatus>;

}  // namespace canhazgpu::kube
