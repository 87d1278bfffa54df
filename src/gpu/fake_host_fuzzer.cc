// libFuzzer target: the simulated host file (docs/fake-host.md), which any
// user who can write it hands to every command. Whatever parses must stay
// within the bounds ParseFakeHost promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gpu/fake_host.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<canhazgpu::gpu::FakeHost> host = canhazgpu::gpu::ParseFakeHost(text, "fuzz.json");
  if (!host.ok()) return 0;
  if (host->gpus.size() > static_cast<size_t>(canhazgpu::kMaxGpus)) std::abort();
  for (const canhazgpu::GpuInfo& g : host->gpus) {
    if (g.mig_memory_slices < 0 || g.mig_memory_slices > 64) std::abort();
    for (const canhazgpu::MigInstance& m : g.mig_instances) {
      if (m.placement_start < 0 || m.placement_start + m.placement_size > g.mig_memory_slices) {
        std::abort();
      }
    }
  }
  return 0;
}
