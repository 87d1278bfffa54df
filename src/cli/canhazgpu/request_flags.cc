#include "cli/canhazgpu/request_flags.h"

#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {

std::vector<FlagSpec> RequestFlags() {
  return {
      {.name = "gpus",
       .short_name = 'g',
       .has_value = true,
       .value_name = "N",
       .help = "how many GPUs",
       .kind = FlagKind::kPositiveInt,
       .default_value = "1"},
      {.name = "gpu-ids",
       .short_name = 'G',
       .has_value = true,
       .value_name = "IDS",
       .help = "exactly these GPUs, e.g. 1,3",
       .kind = FlagKind::kGpuIds},
      {.name = "note",
       .short_name = 'n',
       .has_value = true,
       .value_name = "TEXT",
       .help = "a note shown in status"},
      {.name = "nonblock",
       .help = "fail at once (exit 3) instead of queueing when GPUs are short",
       .overrides = "wait"},
      {.name = "wait",
       .has_value = true,
       .value_name = "DURATION",
       .help = "queue at most this long, then exit 3 (default: until served)",
       .kind = FlagKind::kDuration,
       .overrides = "nonblock"},
  };
}

absl::StatusOr<alloc::ReserveRequest> ParseRequestFlags(const ParsedFlags& flags) {
  alloc::ReserveRequest request;
  std::optional<int> count;
  if (auto g = flags.Value("gpus")) {
    ASSIGN_OR_RETURN(count, PositiveInt("gpus", *g));
  }
  if (auto ids = flags.Value("gpu-ids")) {
    ASSIGN_OR_RETURN(request.ids, ParseGpuIds(*ids));
    if (count && *count != 1 && *count != static_cast<int>(request.ids.size())) {
      return absl::InvalidArgumentError(StrCat("conflicting --gpus ", *count, " and --gpu-ids ",
                                               *ids, " (", request.ids.size(), " ids)"));
    }
  }
  request.count = request.ids.empty() ? count.value_or(1) : static_cast<int>(request.ids.size());
  if (auto w = flags.Value("wait")) {  // used by AcquireWithQueue(); checked up front
    RETURN_IF_ERROR(ParseDuration(*w).status());
    if (flags.Has("nonblock")) {
      return absl::InvalidArgumentError("--wait and --nonblock contradict each other");
    }
  }
  request.note = flags.Value("note").value_or("");
  if (request.note.size() > 1024) {
    return absl::InvalidArgumentError("--note is longer than 1024 characters");
  }
  return request;
}

}  // namespace canhazgpu::cli
