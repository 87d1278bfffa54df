#include "cli/common/device_flags.h"

#include "core/status_macros.h"

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

}  // namespace canhazgpu::cli
