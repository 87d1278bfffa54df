// The flags `reserve` and `run` share: how many GPUs or which, what they
// must be (--where, --min-memory, --product, --mig), --note, --user (a
// display name), --nonblock, --wait. Validated before anything changes (canhazgpu's rules, §1.3).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "alloc/reservations.h"
#include "cli/common/flags.h"
#include "dra/host_selection.h"

namespace canhazgpu::cli {

std::vector<FlagSpec> RequestFlags();

// The longest --user (a display name, as the Go tool's -u).
inline constexpr size_t kMaxDisplayUser = 64;

// -g N and -G ids together are accepted when N equals the number of ids
// (or is 1, canhazgpu's default); otherwise InvalidArgument.
// `wants` receives --where, --min-memory, --product and --mig, checked like
// the other flags (a bad quantity or a --where that does not compile is
// refused here).
absl::StatusOr<alloc::ReserveRequest> ParseRequestFlags(const ParsedFlags& flags,
                                                        dra::DeviceWants* wants);

// Restricts `request` to the GPUs (as queried now) that are what `wants`
// asks for (request->eligible, request->selector). InvalidArgument with the
// explanation when no GPU here could ever serve it; nothing when `wants`
// is empty.
absl::StatusOr<dra::HostSelection> SelectDevices(const std::vector<GpuInfo>& gpus,
                                                 const dra::DeviceWants& wants,
                                                 alloc::ReserveRequest* request);

// What the job is shown of each GPU, in the order of `ids`: the index, or
// for --mig the instance's UUID.
std::vector<std::string> VisibleDevices(const std::vector<int>& ids,
                                        const dra::HostSelection& selection);

}  // namespace canhazgpu::cli
