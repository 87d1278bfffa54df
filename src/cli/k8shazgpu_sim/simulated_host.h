// The simulated hosts of `k8shazgpu-sim cluster`: one fake-host file per
// node (docs/fake-host.md) with GPUs whose UUIDs and PCI addresses are unique
// across the cluster, as they are in a real one, and - on request - the
// first GPUs of each node in MIG mode, split into 1g.10gb instances.
// Pure functions.
#pragma once

#include <string>

namespace canhazgpu::sim {

struct SimulatedHostShape {
  int gpus = 4;
  int mig_gpus = 0;           // the first this many GPUs are in MIG mode
  int instances_per_mig = 7;  // 1g.10gb instances on each MIG GPU (1 to 7)
};

// The node's name: "node-0", "node-1", ...
std::string SimulatedNodeName(int node);

// The fake-host JSON of node `node` (0-based).
std::string SimulatedHostJson(int node, const SimulatedHostShape& shape);

// The NVIDIA driver's MIG capability minors for such a host
// (host/mig_minors.h): each instance's GPU instance (its position + 1, the
// fake host's default) and compute instance 0 on the GPU's minor (its index).
std::string SimulatedMigMinors(const SimulatedHostShape& shape);

}  // namespace canhazgpu::sim
