// What a prepare must provide for one ResourceClaim: the devices the
// scheduler allocated to it from our driver on this node, read from the
// claim's status.allocation — and why not, in words the claim's owner can act
// on (the kubelet shows them verbatim in a FailedPrepareDynamicResources
// event). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/objects_resource.h"

namespace canhazgpu::driver {

struct AllocatedDevice {
  std::string device;                 // the ResourceSlice device name
  std::vector<std::string> requests;  // the results' request names ("gpu", "gpu/small")
  bool admin_access = false;          // monitoring access: shares the device
  std::string share_id;               // consumable capacity (1.35+)
  uint64_t memory = 0;                // its consumedCapacity memory, bytes (a share)
  // The taints the scheduler let this allocation tolerate.
  std::vector<kube::DeviceToleration> tolerations;
};

struct ClaimAllocation {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::vector<AllocatedDevice> devices;  // in the order of the results
  std::vector<std::string> pods;         // status.reservedFor pods, for messages and status
};

// Whether `toleration` covers a taint (Kubernetes' rule: an empty key with
// Exists matches every key; an empty effect every effect).
bool Tolerates(const kube::DeviceToleration& toleration, const std::string& key,
               const std::string& value, const std::string& effect);

// Our part of `claim`, which the kubelet asked for by `uid`: the results of
// `driver` in `pool`. FailedPrecondition when the claim was replaced (another
// uid), is not allocated, has no device of ours, or was allocated a device of
// ours in another node's pool, or a share whose consumedCapacity memory is
// not a byte count.
absl::StatusOr<ClaimAllocation> OurAllocation(const kube::ResourceClaim& claim,
                                              const std::string& uid, const std::string& driver,
                                              const std::string& pool);

}  // namespace canhazgpu::driver
