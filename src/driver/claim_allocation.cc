#include "driver/claim_allocation.h"

#include <algorithm>

#include "core/quantity.h"
#include "core/strings.h"

namespace canhazgpu::driver {

bool Tolerates(const kube::DeviceToleration& toleration, const std::string& key,
               const std::string& value, const std::string& effect) {
  if (!toleration.effect.empty() && toleration.effect != effect) return false;
  const bool exists = toleration.op == "Exists";
  if (toleration.key.empty()) return exists;
  if (toleration.key != key) return false;
  return exists || toleration.value == value;
}

absl::StatusOr<ClaimAllocation> OurAllocation(const kube::ResourceClaim& claim,
                                              const std::string& uid, const std::string& driver,
                                              const std::string& pool) {
  const std::string id = StrCat("claim ", claim.metadata.namespace_name, "/", claim.metadata.name);
  if (claim.metadata.uid != uid) {
    return absl::FailedPreconditionError(
        StrCat(id, " is now uid ", claim.metadata.uid, ", not ", uid,
               ": it was deleted and made again; the kubelet retries with the new one"));
  }
  if (claim.status.allocation.IsEmpty()) {
    return absl::FailedPreconditionError(
        StrCat(id, " is not allocated yet; the scheduler allocates it before the pod starts"));
  }
  ClaimAllocation out{
      .uid = uid, .namespace_name = claim.metadata.namespace_name, .name = claim.metadata.name};
  for (const kube::ResourceClaimConsumerReference& r : claim.status.reserved_for) {
    if (r.resource == "pods") out.pods.push_back(r.name);
  }
  for (const kube::DeviceRequestAllocationResult& r : claim.status.allocation.devices.results) {
    if (r.driver != driver) continue;
    if (r.pool != pool) {
      return absl::FailedPreconditionError(
          StrCat(id, " was allocated ", r.device, " of pool ", r.pool, ", but this node is ", pool,
                 ": the scheduler and the kubelet disagree; delete the pod so it is scheduled "
                 "again"));
    }
    // One device may serve several requests (and then appears once per
    // request); the container runtime gets it once.
    auto same = std::find_if(out.devices.begin(), out.devices.end(), [&](const AllocatedDevice& d) {
      return d.device == r.device && d.share_id == r.share_id;
    });
    if (same != out.devices.end()) {
      same->requests.push_back(r.request);
      same->admin_access = same->admin_access && r.admin_access.value_or(false);
      same->tolerations.insert(same->tolerations.end(), r.tolerations.begin(), r.tolerations.end());
      continue;
    }
    uint64_t memory = 0;
    if (auto consumed = r.consumed_capacity.find("memory");
        !r.share_id.empty() && consumed != r.consumed_capacity.end()) {
      absl::StatusOr<int64_t> bytes = QuantityValue(consumed->second);
      if (!bytes.ok() || *bytes <= 0) {
        return absl::FailedPreconditionError(StrCat(
            id, ": share ", r.share_id, " of ", r.device, " consumes memory '", consumed->second,
            "', not a byte count; delete the pod so it is scheduled again"));
      }
      memory = static_cast<uint64_t>(*bytes);
    }
    out.devices.push_back({.device = r.device,
                           .requests = {r.request},
                           .admin_access = r.admin_access.value_or(false),
                           .share_id = r.share_id,
                           .memory = memory,
                           .tolerations = r.tolerations});
  }
  if (out.devices.empty()) {
    return absl::FailedPreconditionError(
        StrCat(id, " has no device of driver ", driver, " in its allocation"));
  }
  return out;
}

}  // namespace canhazgpu::driver
