// The simulated hosts of `k8shazgpu-sim cluster`: one fake-host file per
// node (docs/fake-host.md) with GPUs of one model (gpu_models.h) whose
// UUIDs and PCI addresses are unique across the cluster, as they are in a
// real one, and - on request - some GPUs in MIG mode, split into the
// model's MIG profiles. Pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace canhazgpu::sim {

struct SimulatedHostShape {
  std::string model = "H100-80GB";  // a name of gpu_models.h
  int gpus = 4;
  // GPU index → the MIG profiles that GPU is split into (it is in MIG
  // mode); the other GPUs are whole.
  std::map<int, std::vector<std::string>> mig;
};

// What --gpus-per-node and --mig-gpus describe: `gpus` H100s, the first
// `mig_gpus` of them split into seven 1g.10gb instances each.
SimulatedHostShape UniformHostShape(int gpus, int mig_gpus);

// InvalidArgument, in one line, for an unknown model, a MIG GPU that is not
// on the node, or profiles the model does not have or that do not fit.
absl::Status CheckHostShape(const SimulatedHostShape& shape);

// The node's name: "node-0", "node-1", ...
std::string SimulatedNodeName(int node);

// The fake-host JSON of node `node` (0-based); `shape` passed CheckHostShape.
std::string SimulatedHostJson(int node, const SimulatedHostShape& shape);

// The NVIDIA driver's MIG capability minors for such a host
// (host/mig_minors.h): each instance's GPU instance (its position + 1, the
// fake host's default) and compute instance 0 on the GPU's minor (its index).
std::string SimulatedMigMinors(const SimulatedHostShape& shape);

}  // namespace canhazgpu::sim
