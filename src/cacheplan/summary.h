// Which nodes a plan item is for, and what the nodes' reports
// (NodeCacheStatus) add up to: an item's state on each node, and the
// plan's status — counts of item-node pairs by state and the Ready and
// Degraded conditions, with messages that name the failed items and
// nodes. The node cache agent writes that status; `k8shazgpu cache status`
// and `vllm run` read the per-item view. Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cacheplan/types.h"
#include "core/clock.h"

namespace canhazgpu::cacheplan {

// Whether `item` is to be cached on a node with `node_labels`: every key of
// its node selector is there with the same value (no selector: every node).
bool AppliesTo(const CacheItem& item, const Labels& node_labels);

// The entry for plan `plan`'s item `name` in a node's report, or null.
const NodeItem* FindNodeItem(const NodeCacheStatus& node, const std::string& plan,
                             const std::string& name);

// One item across the nodes that report it, node names in order.
struct ItemNodes {
  std::vector<std::string> ready;
  std::vector<const NodeItem*> pulling;  // the node's entry, for bytes
  std::vector<const NodeItem*> failed;   // for messages
  std::vector<std::string> pending;
  // The node of each entry in `pulling` and `failed`, in the same order.
  std::vector<std::string> pulling_nodes;
  std::vector<std::string> failed_nodes;
};
// An entry whose type differs from the item's (the item was replaced by
// another of the same name) is an old report and counts as pending.
ItemNodes ItemAcrossNodes(const CacheItem& item, const std::string& plan,
                          const std::vector<NodeCacheStatus>& nodes);

// The plan's status from the nodes' reports. `node_labels`, when it has a
// node, lets an item that applies to that node but is missing from its
// report count as pending (the agent has not seen it yet); nodes with no
// report at all count through it too. Without labels, only reported pairs
// count. Conditions keep their lastTransitionTime from `plan.status` while
// their status is unchanged; new transitions get `now`.
PlanStatus Summarize(const CachePlan& plan, const std::vector<NodeCacheStatus>& nodes,
                     const std::map<std::string, Labels>& node_labels, TimePoint now);

}  // namespace canhazgpu::cacheplan
