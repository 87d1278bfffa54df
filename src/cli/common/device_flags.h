// The flags that say which devices a command wants, defined once for every
// command of both programs that selects devices (canhazgpu run and reserve;
// k8shazgpu run, reserve and vllm run), so that their names, help texts and
// rules cannot drift apart: --gpus, --where (repeatable: every selector must
// pass), --min-memory, --gpu-mem (a share of each GPU's memory, ADR 0018),
// --product, --mig. Which GPUs by id (-G) differs
// between a host and a cluster and stays with each program. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/common/flags.h"
#include "dra/host_selection.h"

namespace canhazgpu::cli {

// The flags, in help order; `max_count` bounds --gpus.
std::vector<FlagSpec> DeviceSelectionFlags(int max_count);

// --where (every value, in order), --min-memory, --product and --mig as
// the devices they ask for, compiled now so that a typo in a selector or a
// bad quantity is refused before anything is created or queued
// (InvalidArgument, with the CEL error's position).
absl::StatusOr<dra::DeviceWants> ParseDeviceWants(const ParsedFlags& flags);

// --gpu-mem in bytes, rounded up to a MiB as shares count (ADR 0018);
// nullopt without the flag. InvalidArgument, one line, for a value that is
// not an amount of memory, and with --mig (MIG instances are never shared).
absl::StatusOr<std::optional<uint64_t>> ParseGpuMem(const ParsedFlags& flags);

}  // namespace canhazgpu::cli
