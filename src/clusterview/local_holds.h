// Internal to clusterview: the devices a node's driver keeps from the
// cluster, read from its NodeGpuStatus (src/driver/node_status.cc), put
// back into the node's pools for the explanations. The driver withdraws a
// GPU (and its MIG devices) from its ResourceSlice while a local canhazgpu
// user holds it or something uses it without a reservation, so the
// allocator would never name it; put back and marked taken, it appears as
// "held by alice" beside the devices claims hold. A withdrawn device is
// rebuilt from one the node still publishes with the same type and product
// (and MIG placement) - GPUs of one product on one node differ only in
// identity - with the identity the status gives; when there is none it is
// left out and reported as not checked. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "clusterview/explain.h"
#include "clusterview/node_attempt.h"
#include "clusterview/view.h"

namespace canhazgpu::clusterview::internal {

// Prefix of the allocator holder of a device held outside Kubernetes.
inline constexpr char kLocalHolder[] = "local:";

// The Held and InUse devices of the node's NodeGpuStatus, and those it keeps
// whole for a local waiter ("Kept"), `checked` false.
std::vector<HeldDevice> HeldDevices(const View& view, const std::string& node);

// `pools` (the node's, from PoolsOf) with every held device present, and
// its holder appended to `taken` as kLocalHolder + device; sets `checked`
// on those put in.
void PutBackHeld(const View& view, const std::string& node, std::vector<dra::DevicePool>& pools,
                 std::vector<HeldDevice>& held, std::vector<TakenDevice>* taken);

}  // namespace canhazgpu::clusterview::internal
