#include "host/mig_minors.h"

#include <charconv>

#include "core/file_read.h"
#include "core/strings.h"

namespace canhazgpu::host {

// The driver's list has a line per possible GPU and compute instance of
// every GPU: a few thousand lines, far under this.
constexpr size_t kMaxMigMinorsBytes = 1 << 20;

absl::StatusOr<MigMinors> MigMinors::Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxMigMinorsBytes, "MIG minors");
  if (!text.ok()) return text.status();
  MigMinors minors = Parse(*text);
  minors.path_ = path;
  return minors;
}

MigMinors MigMinors::Parse(std::string_view text) {
  MigMinors minors;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> fields = Split(line, ' ', /*skip_empty=*/true);
    if (fields.size() != 2) continue;
    int minor = -1;
    const char* end = fields[1].data() + fields[1].size();
    auto [ptr, ec] = std::from_chars(fields[1].data(), end, minor);
    if (ec != std::errc() || ptr != end || minor < 0) continue;
    minors.minors_[std::string(fields[0])] = minor;
  }
  return minors;
}

absl::StatusOr<std::vector<std::string>> MigMinors::CapabilityNodes(int gpu_minor, int gpu_instance,
                                                                    int compute_instance) const {
  const std::string gi = StrCat("gpu", gpu_minor, "/gi", gpu_instance);
  std::vector<std::string> nodes;
  for (const std::string& capability :
       {StrCat(gi, "/access"), StrCat(gi, "/ci", compute_instance, "/access")}) {
    auto it = minors_.find(capability);
    if (it == minors_.end()) {
      return absl::NotFoundError(StrCat(path_.empty() ? "the MIG minors" : path_, " has no ",
                                        capability, " (is the MIG instance still there?)"));
    }
    nodes.push_back(StrCat(kNvidiaCapsDir, "/nvidia-cap", it->second));
  }
  return nodes;
}

}  // namespace canhazgpu::host
