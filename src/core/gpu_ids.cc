#include "core/gpu_ids.h"

#include <algorithm>
#include <charconv>

#include "core/strings.h"

namespace canhazgpu {

absl::StatusOr<std::vector<int>> ParseGpuIds(std::string_view text) {
  std::vector<int> ids;
  if (Trim(text).empty()) {
    return absl::InvalidArgumentError("invalid gpu ids '': expected a list like 1,3");
  }
  for (std::string_view part : Split(text, ',')) {
    part = Trim(part);
    int id = -1;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || id < 0) {
      if (part.starts_with("-")) {
        return absl::InvalidArgumentError(
            StrCat("invalid gpu id '", part, "': ids are non-negative"));
      }
      return absl::InvalidArgumentError(
          StrCat("invalid gpu id '", part, "' in '", text, "': expected a list like 1,3"));
    }
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      return absl::InvalidArgumentError(StrCat("duplicate gpu id ", id, " in '", text, "'"));
    }
    ids.push_back(id);
  }
  return ids;
}

std::string JoinGpuIds(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += StrCat(i > 0 ? "," : "", ids[i]);
  return out;
}

}  // namespace canhazgpu
