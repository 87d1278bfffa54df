#include "cli/common/device_flags.h"

#include "core/quantity.h"
#include "core/reservation.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli {

std::vector<FlagSpec> DeviceSelectionFlags(int max_count) {
  return {
      {.name = "gpus",
       .short_name = 'g',
       .has_value = true,
       .value_name = "N",
       .help = "how many GPUs (MIG instances with --mig)",
       .kind = FlagKind::kPositiveInt,
       .max = max_count,
       .default_value = "1"},
      {.name = "where",
       .has_value = true,
       .value_name = "CEL",
       .help = "only devices this DRA selector accepts; repeatable, all must pass, e.g. "
               "'device.attributes[\"gpu.canhazgpu.dev\"].architecture == \"Hopper\"'",
       .repeatable = true},
      {.name = "min-memory",
       .has_value = true,
       .value_name = "SIZE",
       .help = "only GPUs with at least this much memory, e.g. 40Gi"},
      {.name = "gpu-mem",
       .has_value = true,
       .value_name = "SIZE",
       .help = "a share of this much of each GPU's memory, e.g. 10Gi, 512Mi, 20G (rounded up to "
               "a MiB): several users share one GPU"},
      {.name = "product",
       .has_value = true,
       .value_name = "TEXT",
       .help = "only GPUs whose product name contains this, any case, e.g. a100"},
      {.name = "mig",
       .has_value = true,
       .value_name = "PROFILE",
       .help = "MIG instances of this profile, e.g. 1g.10gb"},
  };
}

absl::StatusOr<dra::DeviceWants> ParseDeviceWants(const ParsedFlags& flags) {
  dra::DeviceWants wants;
  wants.where = flags.Values("where");
  wants.min_memory = flags.Value("min-memory");
  wants.product = flags.Value("product");
  wants.mig_profile = flags.Value("mig");
  RETURN_IF_ERROR(wants.Selectors().status());
  return wants;
}

absl::StatusOr<std::optional<uint64_t>> ParseGpuMem(const ParsedFlags& flags) {
  const std::optional<std::string> text = flags.Value("gpu-mem");
  if (!text) return std::nullopt;
  absl::StatusOr<int64_t> bytes = QuantityValue(*text);
  if (!bytes.ok() || *bytes <= 0) {
    return absl::InvalidArgumentError(
        StrCat("--gpu-mem '", *text, "': expected an amount of memory such as 10Gi, 512Mi or 20G"));
  }
  if (flags.Has("mig")) {
    return absl::InvalidArgumentError(
        "--gpu-mem shares a full GPU by memory; --mig asks for a MIG instance, which is never "
        "shared: give one of them");
  }
  return RoundUpToShareStep(static_cast<uint64_t>(*bytes));
}

}  // namespace canhazgpu::cli
