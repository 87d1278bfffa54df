// The flags that say which devices a command wants, defined once for every
// command of both programs that selects devices (canhazgpu run and reserve;
// k8shazgpu run, reserve and vllm run), so that their names, help texts and
// rules cannot drift apart: --gpus, --where (repeatable: every selector must
// pass), --min-memory, --product, --mig. Which GPUs by id (-G) differs
// between a host and a cluster and stays with each program. Pure;
// thread-safe.
#pragma once

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

}  // namespace canhazgpu::cli
