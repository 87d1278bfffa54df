// The ResourceSlices that publish one node's devices: the device model
// (dra::BuildDevicePool) minus the devices withheld because someone on the
// node holds or uses them, with the devices' taints, cut into slices the API
// server accepts. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dra/devices.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::driver {

// A device taint (resource.k8s.io/v1 DeviceTaint).
struct Taint {
  std::string key;
  std::string value;
  std::string effect;      // NoSchedule, NoExecute, None
  std::string time_added;  // RFC 3339, kept from the first publication

  bool operator==(const Taint&) const = default;
};

// What one node publishes.
struct NodeDevices {
  dra::DevicePool pool;                              // every device; pool.pool is the node name
  std::set<std::string> withheld;                    // device names not to publish now
  std::map<std::string, std::vector<Taint>> taints;  // by device name
  // Not published: each GPU that may be shared, by device name; empty when
  // the node does not share GPUs.
  struct SharedGpu {
    uint64_t total = 0;      // its memory, bytes
    uint64_t shareable = 0;  // less the reserved margin (before local shares)
    // The host offers mps-dmem for it, which a pod's share does not get
    // (the node never writes a pod's dmem.max): published as mps.
    bool dmem_not_applied = false;
    bool operator==(const SharedGpu&) const = default;
  };
  std::map<std::string, SharedGpu> shared;
  // The Node object that owns the slices (garbage-collected with it); an
  // empty uid publishes them without an owner.
  std::string node_uid;
};

// Limits of Kubernetes 1.35 and later (reference/dra.md §2.6), which 1.34
// accepts as well: a slice holds devices or shared counters, not both, and
// at most 64 devices when any of them has taints or consumes counters.
inline constexpr size_t kMaxDevicesPerSlice = 128;
inline constexpr size_t kMaxAdvancedDevicesPerSlice = 64;

// "<node>-gpu.canhazgpu.dev-<n>", cut to the 253 bytes of an object name.
std::string SliceName(const std::string& node, const std::string& driver, size_t n);

struct BuiltSlices {
  // Complete ResourceSlice objects (apiVersion, kind, metadata, spec), in
  // order, with pool.generation = `generation` and resourceSliceCount set.
  std::vector<nlohmann::json> slices;
  // Attributes the API server would reject, left out ("gpu-3: attribute
  // productName: Too long: may not be more than 64 bytes").
  std::vector<std::string> dropped;
};

// The slices for `devices` at `generation`. A pool with nothing to publish
// still gets one empty slice, so consumers see the pool and that it is empty.
BuiltSlices BuildSlices(const NodeDevices& devices, int64_t generation);

}  // namespace canhazgpu::driver
