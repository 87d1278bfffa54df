// libFuzzer target: durations (--duration, --timeout, --wait) and GPU id lists
// (-G, CUDA_VISIBLE_DEVICES), the strings every user types. Whatever parses
// must format and parse back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/duration.h"
#include "core/gpu_ids.h"

namespace {

void CheckDuration(std::string_view text) {
  absl::StatusOr<canhazgpu::Duration> d = canhazgpu::ParseDuration(text);
  if (!d.ok()) return;
  if (*d <= canhazgpu::Duration::zero()) std::abort();  // the contract: positive
  (void)canhazgpu::FormatDuration(*d);
  (void)canhazgpu::FormatDurationShort(*d);
  (void)canhazgpu::FormatTimestamp(canhazgpu::TimePoint(*d));
}

void CheckGpuIds(std::string_view text) {
  absl::StatusOr<std::vector<int>> ids = canhazgpu::ParseGpuIds(text);
  if (!ids.ok()) return;
  absl::StatusOr<std::vector<int>> again = canhazgpu::ParseGpuIds(canhazgpu::JoinGpuIds(*ids));
  if (!again.ok() || *again != *ids) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckDuration(text);
  CheckGpuIds(text);
  return 0;
}
