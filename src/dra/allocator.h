// DRA structured-parameters allocation as the Kubernetes scheduler does it
// (dynamic-resource-allocation structured/internal/stable, reference
// dra.md §4): requests with `exactly` or `firstAvailable`, ExactCount or
// All, device-class and request CEL selectors, matchAttribute and
// distinctAttribute constraints, partitionable counters, devices already
// allocated excluded, adminAccess. Depth-first search with backtracking, so
// it finds an allocation whenever one exists; it fails fast when a request
// can never be met, and explains every failure as data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cel/program.h"
#include "dra/devices.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::dra {

struct DeviceClass {
  std::string name;
  std::vector<std::string> selectors;  // CEL
};

// A request's DeviceToleration: Kubernetes' rule - an empty key with Exists
// tolerates every taint, an empty effect every effect.
struct DeviceToleration {
  std::string key;
  std::string op = "Equal";  // Equal, Exists
  std::string value;
  std::string effect;  // empty: all

  bool Tolerates(const DeviceTaint& taint) const;
};

// ExactDeviceRequest, or one DeviceSubRequest of firstAvailable.
struct RequestSpec {
  std::string name;  // the sub-request's name; empty for `exactly`
  std::string device_class;
  std::vector<std::string> selectors;
  bool all = false;  // allocationMode All
  int64_t count = 1;
  bool admin_access = false;
  // A device with a NoSchedule or NoExecute taint is only allocated when
  // one of these tolerates every such taint of it.
  std::vector<DeviceToleration> tolerations;
  // capacity.requests (name -> amount): a filter per device (its capacity
  // is at least this), and what a share of a multi-allocatable device
  // consumes, rounded up by the capacity's request policy.
  std::map<std::string, int64_t> capacity_requests;
};

struct DeviceRequest {
  std::string name;
  // One entry for `exactly`; the firstAvailable sub-requests in order.
  std::vector<RequestSpec> alternatives;
  bool first_available = false;
};

struct DeviceConstraint {
  std::vector<std::string> requests;  // empty: all; "req" or "req/sub"
  std::string match_attribute;        // one of these two, fully qualified
  std::string distinct_attribute;
};

struct Claim {
  std::string name;  // who holds the devices once allocated
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
};

struct AllocatedDevice {
  std::string request;  // "req" or "req/sub"
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  // Only for a device that allows multiple allocations: this share's id
  // (k8s-uuid) and what it consumes of every capacity of the device.
  std::string share_id;
  std::map<std::string, int64_t> consumed_capacity;
};

struct Allocation {
  std::string node;
  std::vector<AllocatedDevice> devices;
};

// Whether `spec` may have `device`: none of its NoSchedule or NoExecute
// taints is left untolerated. Sets *untolerated to the first that is.
bool ToleratesTaints(const RequestSpec& spec, const Device& device,
                     const DeviceTaint** untolerated = nullptr);

// Why a claim could not be allocated on a node.
struct SelectorReport {
  std::string expression;
  std::string source;  // "class NAME" or "request"
  int rejected = 0;    // devices this selector was the first to reject
  int errors = 0;
  std::string first_error;
};

// A shared device without enough left of one capacity for a request.
struct ShareReport {
  std::string device;
  std::string capacity;  // "memory"
  int64_t value = 0;     // the device's total
  int64_t left = 0;
  int64_t needs = 0;  // what the request would consume, after rounding
  std::vector<std::pair<std::string, int64_t>> holders;  // holder, amount

  // "gpu-0 has 6Gi of 80Gi left (alice 50Gi, bob 24Gi)"
  std::string Text() const;
};

struct RequestReport {
  std::string request;  // "req" or "req/sub"
  int64_t wanted = 0;   // -1 for All
  int devices = 0;      // devices on the node
  std::vector<SelectorReport> selectors;
  int matching = 0;
  std::vector<std::pair<std::string, std::string>> taken;  // device, holder
  std::vector<std::string> counter_blocked;  // devices sharing counters with allocated ones
  std::vector<std::pair<std::string, std::string>> tainted;  // device, untolerated taint
  // Matching devices that can never supply the requested capacity, with
  // the first reason ("gpu-0: memory 100Gi is more than its 80Gi").
  int capacity_rejected = 0;
  std::string capacity_reason;
  std::vector<ShareReport> short_of_capacity;  // shared devices with too little left
  int available = 0;                           // matching, free, counters fit
};

struct Explanation {
  std::string node;
  std::vector<RequestReport> requests;
  std::vector<std::string> unmet_constraints;
  std::string error;          // a CEL or input error that aborted allocation
  bool never = false;         // no device here could ever satisfy the claim
  bool search_limit = false;  // gave up after too many steps

  std::string Text() const;
  nlohmann::ordered_json Json() const;
};

class Allocator {
 public:
  // Compiles every class selector; pools are the nodes, tried in order.
  static absl::StatusOr<std::unique_ptr<Allocator>> Create(std::vector<DeviceClass> classes,
                                                           std::vector<DevicePool> pools);

  // Records a device as allocated (to `holder`), consuming its counters;
  // NotFound for an unknown device. With `consumed` (an existing share's
  // consumedCapacity) on a device that allows multiple allocations, records
  // a share of it instead of the whole device.
  absl::Status MarkAllocated(const std::string& pool, const std::string& device,
                             const std::string& holder,
                             const std::map<std::string, int64_t>* consumed = nullptr);

  // Allocates on the first node where the claim fits and records the
  // devices as allocated to the claim. Errors: InvalidArgument for a bad
  // claim or selector (compile error, unknown class, CEL runtime error);
  // FailedPrecondition when no device anywhere could ever satisfy it;
  // ResourceExhausted when it does not fit now. `why` (if given) explains
  // the failure on the node that came closest.
  absl::StatusOr<Allocation> Allocate(const Claim& claim, Explanation* why = nullptr);

  // Upper bound on search steps per node, so a pathological claim cannot hang.
  void set_step_limit(int64_t steps) { step_limit_ = steps; }

  int device_count() const { return static_cast<int>(devices_.size()); }

 private:
  struct FlatDevice {
    const Device* device;
    int node;
    cel::Value cel;
    std::vector<std::pair<int, int64_t>> consumes;  // counter index, amount
    // Multi-allocatable (allowMultipleAllocations) devices only: the sum
    // consumed per capacity (in device->capacity order), the shares held,
    // and the shares active including those tentatively taken in a search
    // (counters are consumed once, by the first).
    bool shared = false;
    std::vector<int64_t> value;
    std::vector<int64_t> used;
    std::vector<std::pair<std::string, std::vector<int64_t>>> shares;  // holder, amounts
    int active = 0;
  };
  struct Node {
    std::string name;
    int first = 0;
    int count = 0;
    int free = 0;  // devices neither held nor blocked by counters
    // Of those, the ones no share uses either, and per capacity the most
    // left on a shared device in use: a node with no fresh device where no
    // request's capacity fits what is left is skipped without a search.
    int fresh = 0;
    std::vector<std::pair<std::string, int64_t>> max_left;
  };
  // A selector compiled once, with its result for every device (device
  // attributes do not change under an allocator, so each is evaluated once).
  struct CompiledSelector {
    cel::Program program;
    std::vector<int8_t> results;        // per device: 0 unknown, 1 match, 2 no match, 3 error
    std::map<int, std::string> errors;  // device -> CEL error
  };
  struct CompiledSpec;
  class Search;

  Allocator() = default;
  absl::StatusOr<CompiledSelector*> Compile(const std::string& expression);
  // 1 match, 0 no match, -1 CEL error (message in *error).
  int Matches(CompiledSelector* selector, int device, std::string* error);
  absl::StatusOr<std::vector<CompiledSpec>> CompileClaim(const Claim& claim);
  void Take(int device, const std::string& holder);
  Allocation Commit(const Claim& claim, const std::vector<CompiledSpec>& specs,
                    const Search& search, int node);
  void TakeShare(int device, const std::string& holder, std::vector<int64_t> amounts);
  // Reports of shared device `d` short of `need` for some capacity.
  void ReportShortage(int d, const std::vector<int64_t>& need, RequestReport* report) const;
  // Devices of the node neither held nor blocked by shared counters.
  void RecountFree(int node);
  // Whether some ordinary request of the claim might fit a partly used
  // shared device of `node` (false only when none can).
  bool MayFitAShare(const std::vector<CompiledSpec>& specs, const Node& node) const;
  // Why the devices of `node` do or do not serve one request (Explanation).
  RequestReport ReportRequest(const CompiledSpec& spec, const Node& node);

  std::vector<DevicePool> pools_;
  std::map<std::string, DeviceClass> classes_;
  std::vector<FlatDevice> devices_;
  std::vector<Node> nodes_;
  std::vector<int64_t> counters_;    // remaining amount of every shared counter
  std::vector<std::string> holder_;  // per device; empty = free
  std::map<std::string, std::unique_ptr<CompiledSelector>> selectors_;  // by expression
  int64_t step_limit_ = 1'000'000;
};

}  // namespace canhazgpu::dra
