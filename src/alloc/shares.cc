#include "alloc/shares.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>

#include "core/status_macros.h"
#include "core/strings.h"
#include "core/uuid.h"
#include "store/share_check.h"

namespace canhazgpu::alloc {
namespace {

using store::FormatBytes;

bool IsWanted(const ShareWant& w, int gpu) {
  if (!w.ids.empty()) return std::find(w.ids.begin(), w.ids.end(), gpu) != w.ids.end();
  return !w.eligible || std::binary_search(w.eligible->begin(), w.eligible->end(), gpu);
}

bool Fits(const ShareRoom& r, uint64_t memory) { return r.shareable && r.Left() >= memory; }

// Why `r` cannot take a share now, for the shortage message.
std::string WhyNot(const ShareRoom& r) {
  if (!r.shareable) return StrCat("gpu ", r.gpu, ": ", r.reason);
  std::string why = r.reason.empty() ? StrCat("gpu ", r.gpu, ": ", FormatBytes(r.Left()), " of ",
                                              FormatBytes(r.limit), " left")
                                     : StrCat("gpu ", r.gpu, ": ", r.reason);
  for (const std::string& kept : r.kept_for) why += StrCat("; ", kept);
  return why;
}

// Free GPUs in the order a whole-GPU request takes them.
std::vector<int> FreeInPreferenceOrder(const std::vector<GpuCandidate>& candidates,
                                       const std::vector<int>& free) {
  if (free.empty()) return {};
  AllocationRequest all{.count = static_cast<int>(free.size()), .eligible = free};
  std::vector<GpuCandidate> only_free = candidates;
  for (GpuCandidate& c : only_free) {
    if (c.state == GpuCandidate::State::kInUse) c.state = GpuCandidate::State::kReserved;
  }
  absl::StatusOr<std::vector<int>> ordered = ChooseGpus(only_free, all);
  return ordered.ok() ? *ordered : free;
}

absl::Status CheckEverPossible(const std::vector<ShareRoom>& rooms, const ShareWant& want) {
  int capable = 0;
  uint64_t largest = 0;
  for (const ShareRoom& r : rooms) {
    if (!IsWanted(want, r.gpu) || r.limit == 0) continue;
    largest = std::max(largest, r.limit);
    capable += r.limit >= want.memory;
  }
  const int needed = want.ids.empty() ? want.count : static_cast<int>(want.ids.size());
  if (capable >= needed) return absl::OkStatus();
  if (largest < want.memory) {
    return absl::InvalidArgumentError(
        largest == 0 ? std::string("no GPU here can be shared (MIG mode, or no memory reported)")
                     : StrCat("--gpu-mem ", FormatBytes(want.memory),
                              " is more than a GPU here can share: at most ", FormatBytes(largest),
                              " (its memory less a 512Mi margin)"));
  }
  return absl::InvalidArgumentError(StrCat("requested ", needed, " shares of ",
                                           FormatBytes(want.memory), " but only ", capable,
                                           " GPU(s) here can hold one"));
}

}  // namespace

std::vector<ShareRoom> RoomsOf(const std::vector<GpuStatus>& status) {
  std::vector<ShareRoom> out;
  for (const GpuStatus& s : status) {
    ShareRoom r{.gpu = s.gpu, .whole_free = s.state == GpuState::kAvailable};
    const bool mig = s.info && s.info->mig_mode == MigMode::kEnabled;
    if (s.info && !mig) r.limit = ShareableMemory(s.info->memory_total_bytes);
    for (const Reservation& share : s.shares) {
      r.used += share.memory;
      r.limit = r.limit == 0 ? share.shareable : std::min(r.limit, share.shareable);
    }
    if (mig) {
      r.reason = "in MIG mode (never shared)";
    } else if (s.state == GpuState::kError) {
      r.reason = StrCat("in error: ", s.error);
    } else if (s.state == GpuState::kUnreserved) {
      r.reason = "in use without reservation";
    } else if (s.state == GpuState::kInUse && s.shares.empty()) {
      r.reason = StrCat("reserved whole by ", s.reservation->user);
    } else if (r.limit == 0) {
      r.reason = "no memory to share";
    }
    r.shareable = r.reason.empty();
    if (!s.shares.empty() && r.shareable) r.reason = DescribeShares(s);
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<int>> ChooseShareGpus(const std::vector<ShareRoom>& rooms,
                                                 const std::vector<GpuCandidate>& candidates,
                                                 const ShareWant& want) {
  if (want.memory == 0) return absl::InvalidArgumentError("a share needs some memory");
  RETURN_IF_ERROR(CheckEverPossible(rooms, want));
  std::vector<const ShareRoom*> shared;
  std::vector<int> free;
  std::vector<std::string> why;
  for (const ShareRoom& r : rooms) {
    if (!IsWanted(want, r.gpu)) continue;
    if (!Fits(r, want.memory)) {
      why.push_back(WhyNot(r));
    } else if (r.whole_free) {
      free.push_back(r.gpu);
    } else {
      shared.push_back(&r);
    }
  }
  if (!want.ids.empty() && !why.empty()) {
    return absl::ResourceExhaustedError(
        StrCat(why.front(), "; ", FormatBytes(want.memory), " asked"));
  }
  // Best fit among shared GPUs: the least room left that still fits.
  std::sort(shared.begin(), shared.end(), [](const ShareRoom* a, const ShareRoom* b) {
    return std::make_tuple(a->Left(), a->gpu) < std::make_tuple(b->Left(), b->gpu);
  });
  std::vector<int> out;
  for (const ShareRoom* r : shared) out.push_back(r->gpu);
  for (int gpu : FreeInPreferenceOrder(candidates, free)) out.push_back(gpu);
  const size_t needed = want.ids.empty() ? static_cast<size_t>(want.count) : want.ids.size();
  if (out.size() < needed) {
    return absl::ResourceExhaustedError(StrCat(
        "not enough GPU memory free for ", needed, " share(s) of ", FormatBytes(want.memory),
        out.empty() ? "" : StrCat(" (", out.size(), " GPU(s) have room)"), ": ", Join(why, "; ")));
  }
  out.resize(needed);
  return out;
}

std::string DescribeShares(const GpuStatus& s) {
  uint64_t used = 0;
  uint64_t limit = s.info ? ShareableMemory(s.info->memory_total_bytes) : 0;
  std::vector<std::string> holders;
  for (const Reservation& r : s.shares) {
    used += r.memory;
    limit = limit == 0 ? r.shareable : std::min(limit, r.shareable);
    holders.push_back(StrCat(r.user, " ", FormatBytes(r.memory)));
  }
  return StrCat(FormatBytes(used >= limit ? 0 : limit - used), " of ", FormatBytes(limit),
                " left (", Join(holders, ", "), ")");
}

std::string NewShareId() { return RandomUuid(); }

}  // namespace canhazgpu::alloc
