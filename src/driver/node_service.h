// NodeService: what the kubelet asks of the node driver (prepare and
// unprepare ResourceClaims), in our own types. The gRPC layer (src/daemon)
// decodes each DRA protocol version into these structs, calls NodeService
// and encodes the answer, so the driver never sees a protobuf type and one
// implementation serves every protocol version.
//
// Threading: the gRPC server calls from several threads at once, for
// different claims and possibly for the same claim (the kubelet retries),
// so an implementation must be thread-safe and idempotent.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/clock.h"

namespace canhazgpu::driver {

// A ResourceClaim as the kubelet names it; the driver reads the allocation
// from the API server itself.
struct ClaimRef {
  std::string namespace_name;
  std::string uid;  // metadata.uid
  std::string name;
};

// One device prepared for a claim.
struct PreparedDevice {
  std::vector<std::string> request_names;  // empty: serves every request of the claim
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;  // fully qualified, "vendor/class=name"
  // The share of a consumable-capacity allocation; only protocol v1 carries it.
  std::optional<std::string> share_id;
};

struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: this claim failed and devices are ignored
  // With an error: the call's bounds (CallBounds) ran out before this claim
  // was done, which is no refusal of it; the kubelet retries.
  bool out_of_time = false;
};

// What bounds one call's work: when its caller stops waiting for the answer
// (the kubelet's deadline) and whether the caller has gone already. The
// driver checks both before each claim and hands the deadline to every API
// request it makes, so that neither a hung API server nor a request of
// thousands of claims keeps it working for an answer nobody reads.
// The deadline is on the real monotonic clock, as the kubelet's is.
struct CallBounds {
  MonoTime deadline = MonoTime::max();
  std::function<bool()> cancelled;  // null: never; valid only during the call

  // OK while work may start; DeadlineExceeded or Cancelled, saying why, after.
  absl::Status Check() const {
    if (cancelled && cancelled()) {
      return absl::CancelledError("the kubelet cancelled the call");
    }
    if (RealClock().MonoNow() >= deadline) {
      return absl::DeadlineExceededError("the call's deadline passed");
    }
    return absl::OkStatus();
  }
};

class NodeService {
 public:
  virtual ~NodeService() = default;

  // Prepares each claim. The result has one entry per claim, keyed by uid;
  // a failure of one claim is its entry's error, not a failed call. The
  // claims arrive validated (uid, namespace and name set) and unique by uid.
  // Claims not reached within `bounds` get an error saying so.
  virtual std::map<std::string, PrepareResult> PrepareClaims(const std::vector<ClaimRef>& claims,
                                                             const CallBounds& bounds) = 0;

  // Unprepares each claim: uid -> error, "" when it succeeded (also when the
  // claim was never prepared here). Same shape as PrepareClaims.
  virtual std::map<std::string, std::string> UnprepareClaims(const std::vector<ClaimRef>& claims,
                                                             const CallBounds& bounds) = 0;
};

}  // namespace canhazgpu::driver
