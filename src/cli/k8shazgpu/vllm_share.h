// vllm run --gpu-mem: vLLM sizes its KV cache as a fraction of the whole
// device's memory (--gpu-memory-utilization, default 0.9), so on a share it
// would plan for memory that is other runs'. Unless the user gave a
// fraction, the run gives vLLM its share's: of the largest GPU shared by
// memory in the cluster (the fraction that is smallest in bytes), rounded
// down to a hundredth and less one more, so that the driver's reserved
// margin (published capacity is total less it) never lets vLLM plan past
// its share. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// Whether `argv` sets --gpu-memory-utilization (either form).
bool GivesGpuMemoryUtilization(const std::vector<std::string>& argv);

// The fraction for a share of `share_bytes`, from the ResourceSlices'
// devices published with allowMultipleAllocations and a memory capacity;
// nullopt when no device is shared by memory (the run will hold a whole GPU).
std::optional<double> ShareUtilization(uint64_t share_bytes,
                                       const std::vector<nlohmann::json>& slices);

// "0.12": the flag's value as vLLM reads it.
std::string FormatUtilization(double fraction);

}  // namespace canhazgpu::cli::k8s
