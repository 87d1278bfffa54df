// Whether every rank of a gang (ADR 0019) can be placed at once: each pod
// placed as the scheduler would place it (PlacePod), in rank order, on a
// copy of the view that assumes the ranks placed before it — their node,
// their claims' allocations — so the ranks never count the same device
// twice, and required anti-affinity keeps them on distinct nodes. Our own
// gang admission removes the ranks' scheduling gates only when this says
// all fit. Pure (reads a View); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "clusterview/view.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::clusterview {

struct GangPlacement {
  bool fits = false;
  std::vector<std::string> nodes;  // rank i's node, for the ranks that fit
  int first_unplaced = -1;         // the first rank that did not fit
  std::string message;             // why it did not: the scheduler's words
};

// `ranks`: the gang's pods, rank 0 first, as read (with their claims made).
GangPlacement PlaceGang(const View& view, const std::vector<nlohmann::json>& ranks);

// A gang not created yet: `n` ranks like `rank_pod` in `ns` (its labels,
// affinity and node selection), each with its own claim of `claim_spec`
// (the pod's one claim entry), placed as PlaceGang places them. With
// `idle`, on the cluster as if nothing held any device and no pod ran:
// whether the gang could ever fit.
GangPlacement PlaceNewGang(const View& view, const nlohmann::json& rank_pod,
                           const nlohmann::json& claim_spec, const std::string& ns, int n,
                           bool idle);

}  // namespace canhazgpu::clusterview
