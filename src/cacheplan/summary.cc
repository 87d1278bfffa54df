#include "cacheplan/summary.h"

#include <set>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::cacheplan {
namespace {

// How many failures a condition message names before "and N more".
constexpr size_t kNamedInMessage = 3;

std::string Describe(const NodeItem& entry, const std::string& node) {
  std::string text = StrCat(entry.name, " on ", node);
  if (!entry.message.empty()) text += StrCat(": ", entry.message);
  return text;
}

std::string JoinLimited(const std::vector<std::string>& parts) {
  std::vector<std::string> shown(parts.begin(),
                                 parts.begin() + std::min(parts.size(), kNamedInMessage));
  std::string text = Join(shown, "; ");
  if (parts.size() > shown.size()) text += StrCat("; and ", parts.size() - shown.size(), " more");
  return text;
}

Condition MakeCondition(const std::optional<PlanStatus>& previous, std::string type, bool is_true,
                        std::string reason, std::string message, TimePoint now) {
  Condition c{.type = std::move(type),
              .status = is_true ? "True" : "False",
              .reason = std::move(reason),
              .message = std::move(message),
              .last_transition_time = FormatTimestampSeconds(now)};
  if (previous) {
    for (const Condition& old : previous->conditions) {
      if (old.type == c.type && old.status == c.status && !old.last_transition_time.empty()) {
        c.last_transition_time = old.last_transition_time;
      }
    }
  }
  return c;
}

}  // namespace

bool AppliesTo(const CacheItem& item, const Labels& node_labels) {
  for (const auto& [key, value] : item.node_selector) {
    auto it = node_labels.find(key);
    if (it == node_labels.end() || it->second != value) return false;
  }
  return true;
}

const NodeItem* FindNodeItem(const NodeCacheStatus& node, const std::string& plan,
                             const std::string& name) {
  for (const NodeItem& entry : node.items) {
    if (entry.plan == plan && entry.name == name) return &entry;
  }
  return nullptr;
}

ItemNodes ItemAcrossNodes(const CacheItem& item, const std::string& plan,
                          const std::vector<NodeCacheStatus>& nodes) {
  ItemNodes out;
  for (const NodeCacheStatus& node : nodes) {
    const NodeItem* entry = FindNodeItem(node, plan, item.name);
    if (entry == nullptr) continue;
    if (entry->type != item.type) {
      out.pending.push_back(node.node_name);
    } else if (entry->state == kReady) {
      out.ready.push_back(node.node_name);
    } else if (entry->state == kPulling) {
      out.pulling.push_back(entry);
      out.pulling_nodes.push_back(node.node_name);
    } else if (entry->state == kFailed) {
      out.failed.push_back(entry);
      out.failed_nodes.push_back(node.node_name);
    } else {
      out.pending.push_back(node.node_name);
    }
  }
  return out;
}

PlanStatus Summarize(const CachePlan& plan, const std::vector<NodeCacheStatus>& nodes,
                     const std::map<std::string, Labels>& node_labels, TimePoint now) {
  PlanStatus status;
  PlanSummary& s = status.summary;
  s.items = static_cast<int>(plan.items.size());
  std::set<std::string> involved;
  std::vector<std::string> failures;
  std::vector<std::string> in_progress;
  std::map<std::string, const NodeCacheStatus*> reported;
  for (const NodeCacheStatus& node : nodes) reported[node.node_name] = &node;

  for (const CacheItem& item : plan.items) {
    ItemNodes across = ItemAcrossNodes(item, plan.name, nodes);
    std::set<std::string> seen(across.ready.begin(), across.ready.end());
    seen.insert(across.pending.begin(), across.pending.end());
    seen.insert(across.pulling_nodes.begin(), across.pulling_nodes.end());
    seen.insert(across.failed_nodes.begin(), across.failed_nodes.end());
    // Nodes whose labels say the item is theirs but that have not reported it.
    int missing = 0;
    for (const auto& [node, labels] : node_labels) {
      if (!seen.contains(node) && AppliesTo(item, labels)) {
        ++missing;
        involved.insert(node);
        in_progress.push_back(StrCat(item.name, " on ", node, " (pending)"));
      }
    }
    involved.insert(seen.begin(), seen.end());
    s.ready += static_cast<int>(across.ready.size());
    s.pulling += static_cast<int>(across.pulling.size());
    s.failed += static_cast<int>(across.failed.size());
    s.pending += static_cast<int>(across.pending.size()) + missing;
    for (size_t i = 0; i < across.failed.size(); ++i) {
      failures.push_back(Describe(*across.failed[i], across.failed_nodes[i]));
    }
    for (const std::string& node : across.pulling_nodes) {
      in_progress.push_back(StrCat(item.name, " on ", node, " (pulling)"));
    }
    for (const std::string& node : across.pending) {
      in_progress.push_back(StrCat(item.name, " on ", node, " (pending)"));
    }
  }
  s.nodes = static_cast<int>(involved.size());
  const int pairs = s.ready + s.pulling + s.failed + s.pending;

  if (s.failed > 0) {
    status.conditions.push_back(
        MakeCondition(plan.status, "Ready", false, "ItemsFailed",
                      StrCat(s.failed, " of ", pairs, " failed: ", JoinLimited(failures)), now));
  } else if (s.pulling + s.pending > 0) {
    status.conditions.push_back(
        MakeCondition(plan.status, "Ready", false, "Pulling",
                      StrCat(s.ready, " of ", pairs, " ready; ", JoinLimited(in_progress)), now));
  } else if (plan.items.empty()) {
    status.conditions.push_back(
        MakeCondition(plan.status, "Ready", true, "NoItems", "the plan has no items", now));
  } else {
    status.conditions.push_back(MakeCondition(
        plan.status, "Ready", true, "AllReady",
        StrCat(s.ready, " item-node pairs ready (", s.items, " items on ", s.nodes, " nodes)"),
        now));
  }
  if (s.failed > 0) {
    status.conditions.push_back(
        MakeCondition(plan.status, "Degraded", true, "ItemsFailed", JoinLimited(failures), now));
  } else {
    status.conditions.push_back(
        MakeCondition(plan.status, "Degraded", false, "NoFailures", "no item failed", now));
  }
  return status;
}

}  // namespace canhazgpu::cacheplan
