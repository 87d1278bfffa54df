// The simulated host: GPUs and their processes described by a JSON file (the
// format is documented in docs/fake-host.md). FakeGpuProvider re-reads the
// file on every Query(), so a test or a demo can add or remove a process
// while the tool runs. The test libnvidia-ml.so serves the same format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gpu.h"
#include "gpu/gpu_provider.h"

namespace canhazgpu::gpu {

// Health that the test libnvidia-ml.so simulates for one GPU (the
// FakeGpuProvider ignores it).
struct FakeGpuHealth {
  // XIDs an event set hands out once each, in order (nvmlEventSetWait_v2).
  std::vector<uint64_t> xid_events;
  bool lost = false;  // the GPU's queries answer NVML_ERROR_GPU_IS_LOST
  bool retired_pages_pending = false;
  bool events_supported = true;  // false: event registration is NOT_SUPPORTED

  bool operator==(const FakeGpuHealth&) const = default;
};

struct FakeHost {
  std::string driver_version;
  std::string cuda_driver_version;
  std::vector<GpuInfo> gpus;
  std::vector<FakeGpuHealth> health;  // one per GPU, in the same order
};

// Parses the JSON text; `source` names the file in error messages. Unknown
// fields, missing required fields and wrong types are InvalidArgument errors
// naming the field, e.g. "fake host h.json: gpus[1]: unknown field 'memroy'".
absl::StatusOr<FakeHost> ParseFakeHost(std::string_view text, std::string_view source);
absl::StatusOr<FakeHost> LoadFakeHost(const std::string& path);

// JSON for a simulated host of `gpu_count` idle H100s.
std::string DefaultFakeHostJson(int gpu_count);

// Writes DefaultFakeHostJson(gpu_count) to `path` atomically (temp + rename)
// with mode 0644.
absl::Status WriteDefaultFakeHost(const std::string& path, int gpu_count);

class FakeGpuProvider : public GpuProvider {
 public:
  explicit FakeGpuProvider(std::string path) : path_(std::move(path)) {}
  std::string Name() const override { return "fake"; }
  absl::StatusOr<std::vector<GpuInfo>> Query() override;

 private:
  std::string path_;
};

}  // namespace canhazgpu::gpu
