#include "store/share_check.h"

#include <algorithm>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::store {
namespace {

absl::Status CheckShareFields(const Reservation& r) {
  if (r.share.empty() || r.shareable == 0) {
    return absl::InvalidArgumentError(
        StrCat("gpu ", r.gpu, ": a share needs an id and the GPU's shareable memory"));
  }
  if (r.memory > r.shareable) {
    return absl::InvalidArgumentError(StrCat("gpu ", r.gpu, ": a share of ", FormatBytes(r.memory),
                                             " is more than the ", FormatBytes(r.shareable),
                                             " the GPU may share"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  constexpr uint64_t kMi = uint64_t{1} << 20;
  constexpr uint64_t kGi = uint64_t{1} << 30;
  if (bytes >= kGi) {
    if (bytes % kGi == 0) return StrCat(bytes / kGi, "Gi");
    // One decimal, rounded down: never claims more than there is.
    uint64_t tenths = bytes * 10 / kGi;
    if (bytes % (kGi / 10) == 0 || tenths % 10 != 0)
      return StrCat(tenths / 10, ".", tenths % 10, "Gi");
  }
  if (bytes % kMi == 0) return StrCat(bytes / kMi, "Mi");
  return StrCat(bytes);
}

absl::Status CheckMayHold(const std::vector<HeldPart>& held, const Reservation& r) {
  if (!r.IsShare()) {
    if (!r.share.empty()) {
      return absl::InvalidArgumentError(
          StrCat("gpu ", r.gpu, ": a whole-GPU reservation has no share id"));
    }
    if (held.empty()) return absl::OkStatus();
    if (held.front().memory == 0)
      return absl::AlreadyExistsError(StrCat("gpu ", r.gpu, " is already reserved"));
    return absl::AlreadyExistsError(StrCat("gpu ", r.gpu, " is shared (", held.size(),
                                           held.size() == 1 ? " share" : " shares",
                                           "): a whole-GPU reservation waits until they end"));
  }
  RETURN_IF_ERROR(CheckShareFields(r));
  uint64_t used = 0;
  uint64_t limit = r.shareable;
  for (const HeldPart& h : held) {
    if (h.memory == 0)
      return absl::AlreadyExistsError(StrCat("gpu ", r.gpu, " is already reserved whole"));
    if (h.share == r.share)
      return absl::AlreadyExistsError(StrCat("gpu ", r.gpu, " already has share ", r.share));
    used += h.memory;
    // The smallest figure any share recorded: a GPU's memory never grows.
    limit = std::min(limit, h.shareable);
  }
  if (used + r.memory > limit) {
    uint64_t left = used >= limit ? 0 : limit - used;
    return absl::ResourceExhaustedError(StrCat("gpu ", r.gpu, ": ", FormatBytes(r.memory),
                                               " asked, only ", FormatBytes(left), " of ",
                                               FormatBytes(limit), " left to share"));
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::store
