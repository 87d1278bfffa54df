// What the node driver says about each device it prepared, in the claim's
// status.devices (resource.k8s.io/v1 AllocatedDeviceStatus, KEP-4817): per
// device, or per share of one, an entry keyed by driver, pool, device and
// shareID, with a Ready=True condition (reason Prepared) and `data` naming
// the GPU (uuid) and, for a share, its memory, the GPU's shareable memory
// and the isolation it gets. `kubectl get resourceclaim -o yaml` shows
// them, and other tools read what a pod got from the claim alone.
//
// The entries belong to their drivers: a write keeps every entry that is not
// ours (another driver, or our driver on another node's pool). status.devices
// is a list-map without a patch strategy, so a merge or strategic-merge patch
// would replace the whole list; server-side apply would keep others' entries
// on a real API server, but needs field ownership. The write is therefore a
// read-modify-write of the status subresource with the read resourceVersion
// (a Conflict reads again), which every API server (and the simulated one)
// does the same way. Pure functions, and one that talks to the API.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "driver/checkpoint.h"
#include "driver/slices.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::driver {

// The entries one claim should carry, without their conditions'
// lastTransitionTime (which the write adds, keeping an unchanged one).
struct DesiredClaimStatus {
  std::string namespace_name;
  std::string name;
  nlohmann::json entries = nlohmann::json::array();

  bool operator==(const DesiredClaimStatus& other) const {
    return namespace_name == other.namespace_name && name == other.name && entries == other.entries;
  }
};

// The entries of a completed claim: one per device (shares by shareID, a
// device listed twice once); `node` gives the GPUs' uuids (left out of
// `data` for a device the node no longer has).
nlohmann::json DeviceStatusEntries(const CheckpointClaim& claim, const NodeDevices& node,
                                   const std::string& driver);

// Each completed claim of `claims` (by uid) with its entries; claims whose
// prepare has not completed are left out.
std::map<std::string, DesiredClaimStatus> DesiredClaimStatuses(
    const std::map<std::string, CheckpointClaim>& claims, const NodeDevices& node,
    const std::string& driver);

// `current` (a claim's status.devices, or null) with the entries of
// `driver` in `pool` replaced by `ours`: others kept in their order, ours
// after them. A Ready condition that already said the same keeps its
// lastTransitionTime; a new one gets `now` (RFC 3339).
nlohmann::json MergeDeviceStatuses(const nlohmann::json& current, const nlohmann::json& ours,
                                   const std::string& driver, const std::string& pool,
                                   const std::string& now);

// Makes claim `ns`/`name` (uid `uid`) carry `ours` as the entries of
// `driver` in `pool` (none: removes them): reads it, writes its status only
// when the entries differ, again after a Conflict (up to 5 times). Entries
// for devices the claim's allocation no longer has are left out (the API
// server refuses them). OK when the claim is gone or was replaced by one of
// another uid: there is nothing of ours to say on it.
absl::Status WriteClaimDeviceStatus(kube::Client& client, const std::string& ns,
                                    const std::string& name, const std::string& uid,
                                    const nlohmann::json& ours, const std::string& driver,
                                    const std::string& pool, const std::string& now);

}  // namespace canhazgpu::driver
