// libFuzzer target: a change set bundle as `k8shazgpu vllm unpack` reads it
// from a ConfigMap anyone in the namespace could edit. Beyond crashes,
// leaks and timeouts it checks that a refusal is one line, and that what
// decodes encodes back to a bundle that decodes to the same entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "changeset/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace canhazgpu::changeset;  // NOLINT
  std::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ChangeSet> decoded = Decode(input);
  if (!decoded.ok()) {
    if (decoded.status().message().find('\n') != std::string_view::npos) std::abort();
    return 0;
  }
  absl::StatusOr<ChangeSet> again = Decode(Encode(*decoded));
  if (!again.ok() || again->entries.size() != decoded->entries.size()) std::abort();
  for (size_t i = 0; i < again->entries.size(); ++i) {
    if (again->entries[i].path != decoded->entries[i].path ||
        again->entries[i].data != decoded->entries[i].data) {
      std::abort();
    }
  }
  return 0;
}
