// Why a pod or a ResourceClaim waits, in words a plain DRA user can act on -
// what `k8shazgpu explain`, `queue` and `run` show, and what the scheduler
// never says (it only says "0/N nodes are available: N cannot allocate all
// claims"). Each node is tried as PlacePod tries it (node fit, claims
// pinned by earlier allocations, the allocator over the node's pools with
// every allocated device marked with its holder), and the devices the
// node's driver withdrew for a local `canhazgpu` user (NodeGpuStatus) are
// put back as held by that user, so the answer covers the whole node:
// per request, how many devices each selector rejected (CEL runtime errors
// with the has() hint), the constraints not met, which devices are taken and
// by whom (claim, pod, canhazgpu.dev/user), which are held locally, which
// are tainted and not tolerated - and that preemption cannot help, since
// DRA has none (Kubernetes <= 1.37). `never` says that no node could
// satisfy it even with every device free, so `run` can fail at once.
// Pure functions of a View; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clusterview/view.h"
#include "core/clock.h"
#include "dra/allocator.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

// A device a node's driver keeps from the cluster, from its NodeGpuStatus.
struct HeldDevice {
  std::string device;  // "gpu-3"
  // "Held" (a canhazgpu reservation), "InUse" (no reservation) or "Kept"
  // (for a local user waiting in the host's queue).
  std::string state;
  std::string user;                // Held: the holder; Kept: the waiter
  std::string kind;                // Held: "Run" or "Manual"
  std::string since;               // Held: RFC 3339; Kept: when it queued
  std::string until;               // Held: RFC 3339, "" when open-ended
  std::vector<std::string> users;  // InUse: who runs processes on it
  // Whether its node still publishes a device like it, so it was tried
  // against the selectors as if it were free (see explain.cc).
  bool checked = false;

  // "gpu-3 held by alice since 10:02 UTC (canhazgpu)", "gpu-3 kept for
  // alice, waiting since 10:02 UTC (canhazgpu queue)".
  std::string Text(TimePoint now) const;
};

// A device an allocated claim has.
struct TakenBy {
  std::string device;
  std::string claim;  // "ns/name"
  std::vector<std::string> pods;
  std::string user;    // canhazgpu.dev/user of the pod, "" when none
  std::string holder;  // as the allocator names it ("ns/name (pod p)")
};

// One node's answer.
struct NodeDiagnosis {
  std::string node;
  // Why the pod may not go there at all ("is cordoned", "has the taint
  // {k: v}", "does not match the pod's nodeSelector", "the pod's claims are
  // allocated on node-b"); "" when the devices were tried.
  std::string unsuitable;
  bool fits = false;             // every claim fits there now
  std::string claim;             // the claim that did not fit ("ns/name")
  dra::Explanation why;          // the allocator's, for that claim
  std::vector<TakenBy> taken;    // devices of the failing request taken by claims
  std::vector<HeldDevice> held;  // devices of the node held outside Kubernetes
  // What it lacks after its name: "has 1 (gpu-3 held by alice since 10:02
  // UTC (canhazgpu), gpu-5 tainted: XID 79)", "has none matching
  // productName"; `brief` counts the devices by kind when more than three
  // are named ("has none free (4 taken by claims of bob, 3 held by carol
  // (canhazgpu), 1 tainted: XID 79)"), so identical nodes group.
  std::string phrase;
  std::string brief;
};

struct Diagnosis {
  std::string object;  // "pod default/train", "resourceclaim default/x"
  std::string note;    // the pod's --note (NoteOf), "" when none
  bool pending = true;
  bool never = false;   // no node could ever satisfy it, even with every device free
  std::string summary;  // one line; starts "can never run: " when `never`
  // Where it runs (or is allocated) when !pending.
  std::string node;
  std::vector<std::string> devices;  // "gpu-0" (pool/device when not the node's pool)
  // What it asks for, a line per request: "claim default/x: gpu: 2 x
  // gpu.canhazgpu.dev where memory, productName".
  std::vector<std::string> asks;
  std::vector<NodeDiagnosis> nodes;   // closest first
  bool devices_taken = false;         // some wanted device is taken or held: preemption note
  std::vector<std::string> problems;  // slices left out (view.pools.problems)

  // The summary, the note, the asks, then a line per node (nodes with the same brief
  // phrase grouped, the closest of a group in full beneath), the
  // allocator's counts per selector, the preemption note when devices are
  // taken.
  std::string Text() const;
  // {"object", "note", "pending", "never", "summary", "node", "devices", "asks",
  //  "preemption": "" or the note, "nodes": [{"node", "unsuitable", "fits",
  //  "claim", "phrase", "brief", "taken": [{"device", "claim", "pods", "user"}],
  //  "held": [{"device", "state", "user", "kind", "since", "until",
  //  "users", "checked"}], "allocator": dra::Explanation::Json() or null}],
  //  "problems"}
  nlohmann::ordered_json Json() const;
};

inline constexpr char kNoPreemption[] =
    "preemption cannot help: DRA has no preemption (Kubernetes <= 1.37); the pod waits until "
    "the holders finish";

// A pod as read from the API (any pod; one without claims gets only the
// node reasons).
Diagnosis ExplainPod(const View& view, const nlohmann::json& pod, TimePoint now);

// A ResourceClaim as read from the API, on its own (no pod's node fit).
Diagnosis ExplainClaim(const View& view, const nlohmann::json& claim, TimePoint now);

// A ResourceClaim spec not created yet (what `k8shazgpu run` checks before
// it creates anything). InvalidArgument, in one line with the position, for
// a spec the API server or the allocator would refuse (a selector that does
// not compile, a bad count or toleration); FailedPrecondition when a
// DeviceClass it uses is itself unusable; an unknown class or a spec no
// device could satisfy comes back with `never`.
absl::StatusOr<Diagnosis> ExplainClaimSpec(const View& view, const nlohmann::json& claim_spec,
                                           const std::string& ns, TimePoint now);

// One request in short: "2 x gpu.canhazgpu.dev where memory, productName",
// "all mig.canhazgpu.dev", "first of: 1 x a | 2 x b". `request` is one entry
// of spec.devices.requests.
std::string DescribeRequest(const nlohmann::json& request);

// What a selector looks at, in short: the attribute and capacity names it
// reads ("memory, productName"), else its first 40 characters.
std::string SelectorTopic(const std::string& expression);

}  // namespace canhazgpu::clusterview
