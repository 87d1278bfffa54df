// What one memory share of a GPU gets under MPS, as plain values: the
// environment its processes start with, and the checks on the names and
// amounts a share is asked for. No I/O. Thread-safe.
//
// Why these variables (docs/sharing.md, "mps"): CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
// in a client's environment caps the device memory that client may allocate,
// keyed here by the GPU's UUID (the variable takes CUDA_VISIBLE_DEVICES'
// forms), never by an index that depends on enumeration order.
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE gives it the share's part of the GPU's
// threads. Both only ever lower what the control daemon allows, so the
// daemon's own default is the GPU's shareable memory (MpsDaemons): a process
// that edits its environment can reach that, never the driver's margin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "mps/control_program.h"

namespace canhazgpu::mps {

// Where the control program lives under a driver root ("/" on a host; the
// driver container's root on a node).
inline constexpr std::string_view kControlProgram = "usr/bin/nvidia-cuda-mps-control";

// The control program's path under `driver_root`.
std::string ControlProgramPath(std::string_view driver_root);

// A memory amount as MPS takes it, in whole MiB rounded down, so a limit is
// never above the share: 10 GiB is "10240M".
std::string MpsMemoryValue(uint64_t bytes);

// The share's part of the GPU's threads, in percent: its part of the GPU's
// shareable memory, rounded up, at least 1 and at most 100.
int ActiveThreadPercentage(uint64_t share_bytes, uint64_t shareable_bytes);

// OK when `gpu_uuid` is a GPU UUID ("GPU-" and hex digits and dashes),
// `share_id` a name of letters, digits, '.', '_' and '-' (at most 128), and
// 1 MiB <= share_bytes <= shareable_bytes; InvalidArgument naming the GPU
// and what is wrong otherwise.
absl::Status ValidateShare(std::string_view gpu_uuid, std::string_view share_id,
                           uint64_t share_bytes, uint64_t shareable_bytes);

// The environment a share's processes get: CUDA_MPS_PIPE_DIRECTORY (the
// GPU's daemon), CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<uuid>=<MiB>M") and
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. CUDA_VISIBLE_DEVICES is the caller's,
// as for any GPU it hands out.
std::vector<EnvVar> ShareEnvironment(std::string_view gpu_uuid, std::string_view pipe_dir,
                                     uint64_t share_bytes, uint64_t shareable_bytes);

}  // namespace canhazgpu::mps
