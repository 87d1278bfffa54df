// The GPU models a simulated node can have, and NVIDIA's MIG profiles for
// each (from `nvidia-smi mig -lgip` on those GPUs: profile id, memory, and
// the memory slices of the eight a profile takes and where it may start).
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::sim {

struct MigProfile {
  std::string_view name;  // "3g.40gb"
  int id;                 // NVML's GPU instance profile id
  int memory_mib;
  int slices;               // memory slices it takes
  std::vector<int> starts;  // the slices it may start at
};

struct GpuModel {
  std::string_view name;          // what a cluster file says: "A100-80GB"
  std::string_view product_name;  // what NVML reports: "NVIDIA A100-SXM4-80GB"
  std::string_view architecture;
  std::string_view compute_capability;
  int memory_mib;
  std::vector<MigProfile> mig_profiles;  // empty: no MIG (T4, L4)
};

// The models, H100-80GB first (the default).
const std::vector<GpuModel>& GpuModels();
// nullptr for an unknown name.
const GpuModel* FindGpuModel(std::string_view name);
// "A100-40GB, A100-80GB, ...", for messages.
std::string GpuModelNames();

// Where each of `profiles` goes on one GPU of `model`: a start its profile
// allows for each, with no two sharing a memory slice (earliest starts
// first, in the order given). The error says when they cannot all fit, or
// names a profile that is not one of the model's.
struct MigPlacement {
  const MigProfile* profile;
  int start;
};
absl::StatusOr<std::vector<MigPlacement>> PlaceMigProfiles(
    const GpuModel& model, const std::vector<std::string>& profiles);

}  // namespace canhazgpu::sim
