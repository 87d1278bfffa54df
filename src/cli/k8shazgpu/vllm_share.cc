#include "cli/k8shazgpu/vllm_share.h"

#include <algorithm>
#include <cmath>

#include "core/quantity.h"
#include "core/strings.h"
#include "kube/json_object.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

constexpr char kUtilizationFlag[] = "--gpu-memory-utilization";

// The memory capacity of a device other claims may share; 0 otherwise.
int64_t SharedMemoryOf(const json& device) {
  if (!device.is_object() || device.value("allowMultipleAllocations", json()) != true) return 0;
  absl::StatusOr<int64_t> bytes =
      QuantityValue(kube::StringAt(device, "/capacity/memory/value"_json_pointer));
  return bytes.ok() ? *bytes : 0;
}

}  // namespace

bool GivesGpuMemoryUtilization(const std::vector<std::string>& argv) {
  const std::string with_value = StrCat(kUtilizationFlag, "=");
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) {
    return a == kUtilizationFlag || a.rfind(with_value, 0) == 0;
  });
}

std::optional<double> ShareUtilization(uint64_t share_bytes, const std::vector<json>& slices) {
  int64_t largest = 0;
  for (const json& slice : slices) {
    if (!slice.is_object() || !slice.contains("/spec/devices"_json_pointer)) continue;
    const json& devices = slice.at("/spec/devices"_json_pointer);
    if (!devices.is_array()) continue;
    for (const json& device : devices) largest = std::max(largest, SharedMemoryOf(device));
  }
  if (largest <= 0) return std::nullopt;
  const double hundredths =
      std::floor(100.0 * static_cast<double>(share_bytes) / static_cast<double>(largest)) - 1;
  return std::clamp(hundredths, 1.0, 99.0) / 100.0;
}

std::string FormatUtilization(double fraction) {
  const int hundredths = static_cast<int>(std::lround(fraction * 100));
  return StrCat(hundredths / 100, ".", hundredths % 100 < 10 ? "0" : "", hundredths % 100);
}

}  // namespace canhazgpu::cli::k8s
