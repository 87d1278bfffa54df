// `k8shazgpu-sim cluster --cluster-file FILE`: the nodes of a
// heterogeneous simulated cluster, in YAML or JSON —
//
//   nodes:
//   - model: A100-80GB          # gpu_models.h; default H100-80GB
//     gpus: 4                   # 1 to 16
//     count: 1                  # nodes of this shape; default 1
//     mig:                      # GPUs in MIG mode and their profiles
//     - gpu: 0
//       profiles: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]
//   - model: T4-16GB
//     gpus: 2
//
// Nodes are named node-0, node-1, ... in file order. Pure.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/k8shazgpu_sim/simulated_host.h"

namespace canhazgpu::sim {

inline constexpr int kMaxSimNodes = 64;
inline constexpr int kMaxSimGpusPerNode = 16;

// One shape per node. InvalidArgument in one line naming the bad entry
// ("nodes[1].mig[0].profiles: ...").
absl::StatusOr<std::vector<SimulatedHostShape>> ParseClusterFile(const std::string& text);

}  // namespace canhazgpu::sim
