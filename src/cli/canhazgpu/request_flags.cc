#include "cli/canhazgpu/request_flags.h"

#include "cli/common/device_flags.h"
#include "core/duration.h"
#include "core/gpu_ids.h"
#include "core/quantity.h"
#include "core/reservation.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "host/self_executable.h"

namespace canhazgpu::cli {

std::vector<FlagSpec> RequestFlags() {
  std::vector<FlagSpec> flags = DeviceSelectionFlags(kMaxGpus);
  // -G after -g: the host's GPUs by index.
  flags.insert(flags.begin() + 1, {.name = "gpu-ids",
                                   .short_name = 'G',
                                   .has_value = true,
                                   .value_name = "IDS",
                                   .help = "exactly these GPUs, e.g. 1,3",
                                   .kind = FlagKind::kGpuIds});
  const std::vector<FlagSpec> host = {
      {.name = "gpu-mem",
       .has_value = true,
       .value_name = "QUANTITY",
       .help = "a share of this much of each GPU's memory, e.g. 10Gi, 512Mi, 20G (rounded up to "
               "a MiB); several users share one GPU"},
      {.name = "note",
       .short_name = 'n',
       .has_value = true,
       .value_name = "TEXT",
       .help = "a note shown in status"},
      {.name = "user",
       .short_name = 'u',
       .has_value = true,
       .value_name = "NAME",
       .help = "the name status shows beside yours, e.g. a person behind a shared account; "
               "the GPUs stay yours"},
      {.name = "nonblock",
       .help = "fail at once (exit 3) instead of queueing when GPUs are short",
       .overrides = "wait"},
      {.name = "wait",
       .short_name = 'w',
       .has_value = true,
       .value_name = "DURATION",
       .help = "queue at most this long, then exit 3 (default: until served)",
       .kind = FlagKind::kDuration,
       .overrides = "nonblock"},
  };
  flags.insert(flags.end(), host.begin(), host.end());
  return flags;
}

namespace {

// A name, not a note: one line of printable text, short enough for a
// table cell.
absl::Status CheckDisplayUser(const std::string& user) {
  if (user.empty()) return absl::InvalidArgumentError("--user must not be empty");
  if (user.size() > kMaxDisplayUser) {
    return absl::InvalidArgumentError(
        StrCat("--user is longer than ", kMaxDisplayUser, " characters"));
  }
  for (unsigned char c : user) {
    if (c < ' ' || c == 0x7f) {
      return absl::InvalidArgumentError("--user must be one line of printable text");
    }
  }
  return absl::OkStatus();
}

// --gpu-mem: a Kubernetes quantity of bytes, rounded up to a MiB as the
// store counts shares (ADR 0018).
absl::StatusOr<uint64_t> ParseGpuMem(const std::string& text) {
  absl::StatusOr<int64_t> bytes = QuantityValue(text);
  if (!bytes.ok() || *bytes <= 0) {
    return absl::InvalidArgumentError(
        StrCat("--gpu-mem '", text, "': expected an amount of memory such as 10Gi, 512Mi or 20G"));
  }
  return RoundUpToShareStep(static_cast<uint64_t>(*bytes));
}

}  // namespace

absl::StatusOr<alloc::ReserveRequest> ParseRequestFlags(const ParsedFlags& flags,
                                                        dra::DeviceWants* wants_out) {
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
  ASSIGN_OR_RETURN(dra::DeviceWants wants, ParseDeviceWants(flags));
  if (!wants.empty() && !request.ids.empty()) {
    return absl::InvalidArgumentError(StrCat("--gpu-ids names the GPUs; ", wants.Describe(),
                                             " chooses them: use one or the other"));
  }
  if (auto mem = flags.Value("gpu-mem")) {
    ASSIGN_OR_RETURN(request.memory, ParseGpuMem(*mem));
    if (wants.mig_profile) {
      return absl::InvalidArgumentError(
          "--gpu-mem shares whole GPUs; MIG instances are not shared");
    }
    if (flags.Has("force")) {
      return absl::InvalidArgumentError(
          "--force takes whole GPUs in use without reservation; it cannot be combined with "
          "--gpu-mem");
    }
  }
  *wants_out = std::move(wants);
  if (auto user = flags.Value("user")) {
    RETURN_IF_ERROR(CheckDisplayUser(*user));
    request.display_user = *user;
  }
  request.note = flags.Value("note").value_or("");
  if (request.note.size() > 1024) {
    return absl::InvalidArgumentError("--note is longer than 1024 characters");
  }
  return request;
}

absl::StatusOr<dra::HostSelection> SelectDevices(const std::vector<GpuInfo>& gpus,
                                                 const dra::DeviceWants& wants,
                                                 alloc::ReserveRequest* request) {
  if (wants.empty()) return dra::HostSelection{};
  ASSIGN_OR_RETURN(dra::HostSelection selection,
                   dra::SelectHostGpus(gpus, host::HostName(), wants, request->count));
  request->eligible = selection.eligible;
  request->selector = wants.Describe();
  return selection;
}

std::vector<std::string> VisibleDevices(const std::vector<int>& ids,
                                        const dra::HostSelection& selection) {
  std::vector<std::string> out;
  for (int id : ids) {
    auto mig = selection.mig_uuid.find(id);
    out.push_back(mig == selection.mig_uuid.end() ? std::to_string(id) : mig->second);
  }
  return out;
}

}  // namespace canhazgpu::cli
