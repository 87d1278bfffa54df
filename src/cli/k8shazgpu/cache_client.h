// The CachePlan and NodeCacheStatus reads and the conflict-safe plan edit
// that `k8shazgpu cache` and `vllm run` share. Edits are read-modify-write
// with the read resourceVersion: a 409 Conflict (another writer in
// between) reads again and applies the edit again; the plan is created
// when missing; an edit that fails writes nothing. Called from the
// command's thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheplan/types.h"
#include "cli/k8shazgpu/context.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// The plan object, or nullopt when it does not exist.
absl::StatusOr<std::optional<nlohmann::json>> ReadPlan(Context& ctx, const std::string& name);

// Reads the plan (or starts an empty one), applies `edit` to its items,
// validates the result and writes it. `edit` may run several times, each
// on a fresh read.
absl::Status EditPlan(Context& ctx, const std::string& plan_name,
                      const std::function<absl::Status(std::vector<cacheplan::CacheItem>&)>& edit);

// Every node's report; objects that do not parse are skipped.
absl::StatusOr<std::vector<cacheplan::NodeCacheStatus>> ListNodeCacheStatuses(Context& ctx);

// Node labels, when the caller may list nodes (else empty): with them an
// item a node should have but does not report yet counts as pending there.
std::map<std::string, cacheplan::Labels> NodeLabels(Context& ctx);

}  // namespace canhazgpu::cli::k8s
