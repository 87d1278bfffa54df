#include "alloc/choose_gpus.h"

#include <algorithm>
#include <tuple>

#include "core/strings.h"

namespace canhazgpu::alloc {
namespace {

using State = GpuCandidate::State;

bool Usable(const GpuCandidate& g, bool force) {
  return g.state == State::kFree || (force && g.state == State::kInUse);
}

// Sort key: smaller is better.
auto PreferenceKey(const GpuCandidate& g, int id) {
  // Most recent own use first: negate so that later times sort first.
  int64_t own = g.last_used_by_requester ? -ToEpochMillis(*g.last_used_by_requester) : 0;
  // Longest free first; never released counts as oldest.
  int64_t released = g.last_released ? ToEpochMillis(*g.last_released) : INT64_MIN;
  return std::make_tuple(g.state == State::kInUse, !g.last_used_by_requester.has_value(), own,
                         released, id);
}

bool Eligible(const AllocationRequest& r, int id) {
  return !r.eligible || std::binary_search(r.eligible->begin(), r.eligible->end(), id);
}

std::string ShortageMessage(const std::vector<GpuCandidate>& gpus, const AllocationRequest& r,
                            int usable) {
  int reserved = 0, in_use = 0, errors = 0, considered = 0;
  for (int id = 0; id < static_cast<int>(gpus.size()); ++id) {
    if (!Eligible(r, id)) continue;
    const GpuCandidate& g = gpus[static_cast<size_t>(id)];
    ++considered;
    reserved += g.state == State::kReserved;
    in_use += g.state == State::kInUse;
    errors += g.state == State::kError;
  }
  std::vector<std::string> why;
  if (reserved > 0) why.push_back(StrCat(reserved, " reserved"));
  if (in_use > 0) why.push_back(StrCat(in_use, " in use without reservation"));
  if (errors > 0) why.push_back(StrCat(errors, " in error"));
  std::string message = StrCat("not enough GPUs available: requested ", r.count, ", ", usable,
                               " free of ", considered, r.eligible ? " matching" : "");
  if (!why.empty()) message += StrCat(" (", Join(why, ", "), ")");
  if (in_use > 0) message += "; run 'canhazgpu status' to see who uses them";
  return message;
}

}  // namespace

absl::StatusOr<std::vector<int>> ChooseGpus(const std::vector<GpuCandidate>& gpus,
                                            const AllocationRequest& request) {
  const int pool = static_cast<int>(gpus.size());
  if (!request.ids.empty()) {
    for (int id : request.ids) {
      if (id < 0 || id >= pool) {
        return absl::InvalidArgumentError(
            StrCat("gpu id ", id, " is out of range: the pool has GPUs 0-", pool - 1));
      }
      if (!Eligible(request, id)) {
        return absl::InvalidArgumentError(StrCat("gpu ", id, " does not match the request"));
      }
    }
    for (int id : request.ids) {
      const GpuCandidate& g = gpus[static_cast<size_t>(id)];
      if (Usable(g, request.force)) continue;
      std::string hint = g.state == State::kInUse ? "; use --force if it is yours" : "";
      return absl::ResourceExhaustedError(StrCat("gpu ", id, " is ", g.reason, hint));
    }
    return request.ids;
  }
  if (request.count < 1) {
    return absl::InvalidArgumentError("the GPU count must be at least 1");
  }
  if (request.count > pool) {
    return absl::InvalidArgumentError(
        StrCat("requested ", request.count, " GPUs but the pool has only ", pool));
  }
  if (request.eligible && request.count > static_cast<int>(request.eligible->size())) {
    return absl::InvalidArgumentError(
        StrCat("requested ", request.count, " GPUs but only ", request.eligible->size(), " match"));
  }
  std::vector<int> usable;
  int free_now = 0;
  for (int id = 0; id < pool; ++id) {
    const GpuCandidate& g = gpus[static_cast<size_t>(id)];
    if (!Eligible(request, id)) continue;
    if (Usable(g, request.force)) usable.push_back(id);
    free_now += g.state == State::kFree;
  }
  if (static_cast<int>(usable.size()) < request.count) {
    return absl::ResourceExhaustedError(ShortageMessage(gpus, request, free_now));
  }
  std::sort(usable.begin(), usable.end(), [&](int a, int b) {
    return PreferenceKey(gpus[static_cast<size_t>(a)], a) <
           PreferenceKey(gpus[static_cast<size_t>(b)], b);
  });
  usable.resize(static_cast<size_t>(request.count));
  return usable;
}

}  // namespace canhazgpu::alloc
