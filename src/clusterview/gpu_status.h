// `k8shazgpu status`: every GPU and MIG device of the cluster by node, with
// who holds it, read from a View - the ResourceSlices (devices, products,
// memory, taints), the ResourceClaims (allocations and the pods they are
// reserved for) and each node's NodeGpuStatus (local canhazgpu holders,
// unreserved use, devices the node driver withheld from its slice). Nodes
// of other drivers (NVIDIA's) have no NodeGpuStatus and are shown from their
// slices and claims alone. A device is listed when its driver's `type`
// attribute is "gpu" or "mig" (ours and NVIDIA's both say so); devices of
// pools without a node are left out.
//
// Each device has one state, the first that holds:
//   Claimed      allocated to a ResourceClaim (status.allocation), or - when
//                the claim is gone from the API - prepared for one by the
//                node (NodeGpuStatus Prepared);
//   Held         held by a local `canhazgpu reserve/run` user;
//   InUse        processes run on it without any reservation;
//   Tainted      a NoSchedule or NoExecute taint, from the slice or the
//                NodeGpuStatus (a None taint only informs: listed, no state);
//   Unavailable  free itself, but its GPU's shared counters are spent by a
//                device that is not free (a whole GPU beside its claimed MIG
//                instance, or a MIG instance beside its claimed GPU);
//   Free.
// So the states partition the devices; taints are listed whatever the state.
//
// Since when a claim holds a device: status.allocation.allocationTimestamp
// when the server recorded one (Kubernetes sets it only with binding
// conditions); otherwise the earliest status.startTime of the pods it is
// reserved for (when the user's pod began to own it); otherwise the claim's
// metadata.creationTimestamp (a claim allocated but not yet used). Unknown
// when none is readable.
//
// Pure functions of a View and the time `now`; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clusterview/view.h"
#include "core/clock.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

// The OS user a pod (or claim) was created for; the node driver reads the
// same label (driver/api_claim_source.h).
inline constexpr char kUserLabel[] = "canhazgpu.dev/user";

enum class GpuState { kClaimed, kHeld, kInUse, kTainted, kUnavailable, kFree };

// "Claimed", "Held", "InUse", "Tainted", "Unavailable", "Free".
const char* GpuStateName(GpuState state);

struct PodRef {
  std::string namespace_name;
  std::string name;
  // A rank of a multi-node run (gang_view.h): its Job and rank; "" and -1
  // for any other pod.
  std::string job;
  int rank = -1;

  // "ml/train-0", or "job ml/gang rank 1" for a rank.
  std::string Text() const;
};

struct ClaimHolder {
  std::string namespace_name;
  std::string name;
  std::vector<PodRef> pods;        // status.reservedFor pods, in order
  std::string user;                // kUserLabel of the first pod with it, else the claim's
  std::string note;                // the first pod's --note (NoteOf), "" when none
  std::optional<TimePoint> since;  // see the header comment
  // A share of a GPU shared by memory (consumable capacity): the
  // allocation's shareID and its consumedCapacity memory; "" and 0 for a
  // claim that holds the device alone.
  std::string share_id;
  int64_t memory_bytes = 0;
};

// A local reservation (NodeGpuStatus state Held).
// LocalHold::kind of a device the node keeps for a local user waiting in
// the host's queue (NodeGpuStatus keptFor).
inline constexpr char kQueuedHold[] = "Queued";

struct LocalHold {
  std::string user;
  std::string kind;  // "Manual", "Run", or kQueuedHold
  std::optional<TimePoint> since;
  std::optional<TimePoint> until;  // none for Run: it lasts as long as its command
};

// What runs on the device (NodeGpuStatus usage), shown for InUse.
struct DeviceUsage {
  std::vector<std::string> users;
  int64_t memory_used_bytes = 0;
};

struct GpuTaint {
  std::string key;
  std::string value;
  std::string effect;  // None, NoSchedule, NoExecute
  std::string reason;  // NodeGpuStatus's sentence, when it has one
  std::string source;  // "ResourceSlice" or "NodeGpuStatus"

  std::string ToString() const;  // "key=value:Effect", "key:Effect"
};

struct GpuRow {
  std::string node;
  std::string driver;
  std::string device;        // "gpu-3", "gpu-0-mig-1g5gb-19-0"
  std::string type;          // "gpu", "mig"
  std::string product;       // productName; "" when unknown
  int64_t memory_bytes = 0;  // the memory capacity; 0 when unknown (a withheld device)
  GpuState state = GpuState::kFree;
  std::vector<ClaimHolder> claims;  // kClaimed (several only with adminAccess or sharing)
  // Published with allowMultipleAllocations: claims hold shares of its
  // memory, and memory_left is what they leave (memory_bytes when none).
  bool shared = false;
  int64_t memory_left = 0;
  std::optional<LocalHold> held;     // kHeld
  std::optional<DeviceUsage> usage;  // whenever the NodeGpuStatus reports processes
  std::vector<GpuTaint> taints;      // every taint, whatever the state
  // kUnavailable: the devices, not free, that spent the shared counters.
  std::vector<std::string> blocked_by;
  // What the node keeps for local users waiting in the host's queue
  // (NodeGpuStatus keptFor), whatever the state: "alice" (the whole GPU),
  // "bob 20Gi" (memory for a share).
  std::vector<std::string> kept_for;
};

// Devices of one kind by state; the states partition them.
struct DeviceCounts {
  int total = 0;
  int free = 0;
  int claimed = 0;
  int held = 0;
  int in_use = 0;
  int tainted = 0;
  int unavailable = 0;
};

// A node's devices counted by kind, each device once: whole GPUs (a GPU in
// MIG mode included, once) in the fields of DeviceCounts, and its MIG
// instances apart in `mig` - 4 GPUs, one with 7 instances, are 4 GPUs and
// 7 MIG instances, never 11 GPUs (issue 33).
struct NodeSummary : DeviceCounts {
  std::string node;
  DeviceCounts mig;
  // The NodeGpuStatus's status.updateTime; none for a node without one.
  std::optional<TimePoint> status_updated;
};

struct GpuStatusReport {
  TimePoint now;
  std::vector<GpuRow> rows;           // by node, then device in natural order (gpu-2 < gpu-10)
  std::vector<NodeSummary> nodes;     // by node; nodes with devices (and the --node one)
  std::vector<std::string> problems;  // slices or objects that could not be read, one line each
};

struct GpuStatusOptions {
  // Only this node. NotFound, in one line naming the closest node names,
  // when the cluster has no such node.
  std::string node;
};

absl::StatusOr<GpuStatusReport> GpuStatus(const View& view, TimePoint now,
                                          const GpuStatusOptions& options = {});

// Rows for a text table (the CLI renders them with cli::Table); cells are
// raw text, to be escaped for display by the renderer.
struct TextRows {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};

// NODE DEVICE TYPE PRODUCT MEMORY STATE HOLDER FOR NOTE, one row per device:
//   Claimed  HOLDER "alice (ml/train-0)" (the pods, or "claim ns/name" with
//            none; a multi-node run's rank as "job ml/gang rank 1"), FOR how long, NOTE the run's
//            --note in quotes, then "claim ml/train-gpu"; on a GPU shared by memory each holder
//            with its share ("alice (ml/train-0) 10Gi") and NOTE first
//            "shared: 6Gi of 80Gi left";
//   Held     HOLDER "alice (canhazgpu)", FOR how long, NOTE "until
//            2026-11-24T12:00:00Z (in 1h 5m)" or "while its command runs";
//   InUse    HOLDER the users, NOTE "no reservation, 2Gi used";
//   Unavailable  NOTE "GPU shared with gpu-0-mig-1g5gb-19-0";
// and every taint ("taint gpu.canhazgpu.dev/xid=79:NoSchedule") added to NOTE.
TextRows StatusRows(const GpuStatusReport& report);

// NODE GPUS FREE CLAIMED HELD IN-USE TAINTED UNAVAILABLE MIG MIG-FREE, one
// row per node: the state columns count whole GPUs; MIG and MIG-FREE the
// MIG instances and the free ones ("-" on a node without any).
TextRows SummaryRows(const GpuStatusReport& report);

// `--json`: {"nodes": [...], "devices": [...], "problems": [...]}, with
// summary_only just {"nodes": [...], "problems": [...]}. Field names are
// stable; optional ones are absent, never null:
//   nodes[]:   node, total, free, claimed, held, inUse, tainted, unavailable
//              (whole GPUs), mig {total, free, claimed, held, inUse, tainted,
//              unavailable} (MIG instances),
//              statusUpdateTime (RFC 3339, when the node has a NodeGpuStatus)
//   devices[]: node, driver, device, type, product, memoryBytes (0: unknown),
//              state (GpuStateName),
//              claims[] {namespace, name, pods[] {namespace, name, job and
//                        rank for a multi-node run's rank}, user,
//                        note (when any), since, seconds}  (state Claimed)
//              held {user, kind, since, until, seconds}   (state Held)
//              usage {users[], memoryUsedBytes}  (when reported)
//              taints[] {key, value, effect, reason, source} (when any)
//              blockedBy[] device names          (state Unavailable)
// `since`/`until` are RFC 3339 to the second; `seconds` is now - since.
nlohmann::ordered_json StatusJson(const GpuStatusReport& report, bool summary_only = false);

// Natural order of device names: digit runs compare as numbers, so
// "gpu-2" < "gpu-10".
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace canhazgpu::clusterview
