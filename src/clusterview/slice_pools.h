// The live ResourceSlices as the allocator's device pools, the way the
// scheduler's GatherPools reads them (reference/dra.md §4.2): slices grouped
// by driver and pool, only those of the pool's highest generation, a pool
// used only when all of its resourceSliceCount slices are there. Attributes,
// capacities, shared counters (from any slice of the pool, as Kubernetes 1.35
// puts them in slices of their own), counter consumption and taints are read
// into dra::Device. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/devices.h"
#include "kube/objects_resource.h"

namespace canhazgpu::clusterview {

struct NodePool {
  std::string node;  // spec.nodeName; empty for an allNodes pool
  dra::DevicePool pool;
};

struct SlicePools {
  std::vector<NodePool> pools;  // by driver, then pool name
  // Pools left out, one line each ("pool gpu.canhazgpu.dev/node-1: slice
  // node-1-x: device gpu-0: attribute index: ...", "... is incomplete").
  std::vector<std::string> problems;
};

SlicePools PoolsFromSlices(const std::vector<kube::ResourceSlice>& slices);

// One slice's device as the allocator sees it; InvalidArgument in one line
// for a malformed attribute, quantity or taint.
absl::StatusOr<dra::Device> DeviceFromSlice(const kube::Device& device);

}  // namespace canhazgpu::clusterview
