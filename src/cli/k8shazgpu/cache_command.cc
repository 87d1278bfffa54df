// `k8shazgpu cache`: the developer's view and edits of a CachePlan
// (deploy/crds/cacheplans.yaml) and of what the nodes report for it
// (NodeCacheStatus):
//   cache plan show [--plan NAME]              the items (-o json|yaml: the object)
//   cache status [--json] [--plan NAME]        per item: nodes ready, pulling, failed
//   cache add image REF | repo URL | model ID  [--name N] [--node-selector k=v,...] ...
//   cache remove NAME...
//   cache update NAME... | --all               ask the nodes to refresh (refreshRequestedAt)
// Edits go through EditPlan (cache_client.h): conflict-safe, and an edit
// that fails (duplicate name, unknown item, invalid reference) writes
// nothing.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "cacheplan/image_ref.h"
#include "cacheplan/summary.h"
#include "cacheplan/types.h"
#include "cacheplan/validate.h"
#include "changeset/change_set.h"
#include "cli/k8shazgpu/cache_client.h"
#include "cli/k8shazgpu/cache_edit.h"
#include "cli/k8shazgpu/cluster_read.h"
#include "cli/k8shazgpu/commands.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using cacheplan::CacheItem;
using nlohmann::json;

constexpr char kUsage[] =
    "use: k8shazgpu cache plan show | status | add image|repo|model SOURCE | remove NAME... | "
    "update NAME...|--all";

// The widest line of `cache status` (its NODES cells are cut to fit).
constexpr size_t kCacheStatusWidth = 100;

// The flags each subcommand accepts beside --plan and the global ones.
const std::map<std::string, std::vector<std::string>>& SubcommandFlags() {
  static const std::map<std::string, std::vector<std::string>> kFlags = {
      {"plan", {}},
      {"status", {"json"}},
      {"add", {"name", "branch", "commit", "revision", "allow", "node-selector", "pull-secret"}},
      {"remove", {}},
      {"update", {"all"}},
  };
  return kFlags;
}

std::string PlanName(const ParsedFlags& flags) {
  return flags.Value("plan").value_or(cacheplan::kDefaultPlan);
}

std::string Source(const CacheItem& item) {
  if (item.image) return item.image->ref;
  if (item.git_repo) {
    if (!item.git_repo->branch.empty())
      return StrCat(item.git_repo->url, " @ ", item.git_repo->branch);
    if (!item.git_repo->commit.empty())
      return StrCat(item.git_repo->url, " @ ", item.git_repo->commit);
    return item.git_repo->url;
  }
  if (item.hf_model) {
    std::string text = item.hf_model->repo_id;
    if (!item.hf_model->revision.empty()) text += StrCat(" @ ", item.hf_model->revision);
    if (!item.hf_model->allow_patterns.empty()) {
      text += StrCat(" (", Join(item.hf_model->allow_patterns, " "), ")");
    }
    return text;
  }
  return "";
}

std::string Scope(const CacheItem& item) {
  if (item.node_selector.empty()) return "all nodes";
  std::vector<std::string> pairs;
  for (const auto& [k, v] : item.node_selector) pairs.push_back(StrCat(k, "=", v));
  return Join(pairs, ",");
}

absl::StatusOr<int> PlanShow(Context& ctx, const ParsedFlags& flags) {
  if (flags.positional.size() != 2 || flags.positional[1] != "show") {
    return absl::InvalidArgumentError("use: k8shazgpu cache plan show [--plan NAME]");
  }
  const std::string name = PlanName(flags);
  ASSIGN_OR_RETURN(std::optional<json> object, ReadPlan(ctx, name));
  if (!object) {
    if (PrintDocument(ctx, flags, nlohmann::ordered_json::object())) return 0;
    std::printf("Cache plan %s does not exist yet; 'k8shazgpu cache add' creates it\n",
                name.c_str());
    return 0;
  }
  if (PrintDocument(ctx, flags, nlohmann::ordered_json(*object))) return 0;
  ASSIGN_OR_RETURN(cacheplan::CachePlan plan, cacheplan::PlanFromJson(*object));
  if (plan.items.empty()) {
    std::printf("Cache plan %s has no items\n", name.c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const CacheItem& item : plan.items) {
    rows.push_back({item.name, item.type, Source(item), Scope(item),
                    item.pull_secret
                        ? StrCat(item.pull_secret->namespace_name, "/", item.pull_secret->name)
                        : "",
                    item.refresh_requested_at});
  }
  PrintTable(ctx, {"ITEM", "TYPE", "SOURCE", "SCOPE", "PULL SECRET", "REFRESH REQUESTED"}, rows);
  return 0;
}

// "failed on node-0, node-1: MESSAGE": nodes failing the same way share a
// line, the message said once.
std::vector<std::string> FailureLines(const cacheplan::ItemNodes& across) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_message;
  for (size_t i = 0; i < across.failed.size(); ++i) {
    const std::string& message = across.failed[i]->message;
    auto same = std::find_if(by_message.begin(), by_message.end(),
                             [&](const auto& m) { return m.first == message; });
    if (same == by_message.end()) same = by_message.insert(by_message.end(), {message, {}});
    same->second.push_back(across.failed_nodes[i]);
  }
  std::vector<std::string> lines;
  for (const auto& [message, failed_nodes] : by_message) {
    lines.push_back(StrCat("failed on ", Join(failed_nodes, ", "), ": ", message));
  }
  return lines;
}

absl::StatusOr<int> Status(Context& ctx, const ParsedFlags& flags) {
  if (flags.positional.size() != 1) return absl::InvalidArgumentError(kUsage);
  const std::string name = PlanName(flags);
  ASSIGN_OR_RETURN(std::optional<json> object, ReadPlan(ctx, name));
  if (!object) {
    return absl::NotFoundError(
        StrCat("cache plan ", name, " does not exist; 'k8shazgpu cache add' creates it"));
  }
  ASSIGN_OR_RETURN(cacheplan::CachePlan plan, cacheplan::PlanFromJson(*object));
  ASSIGN_OR_RETURN(std::vector<cacheplan::NodeCacheStatus> nodes, ListNodeCacheStatuses(ctx));
  const std::map<std::string, cacheplan::Labels> labels = NodeLabels(ctx);

  nlohmann::ordered_json doc = {{"plan", name}, {"items", nlohmann::ordered_json::array()}};
  std::vector<std::vector<std::string>> rows;
  for (const CacheItem& item : plan.items) {
    cacheplan::ItemNodes across = cacheplan::ItemAcrossNodes(item, name, nodes);
    std::set<std::string> reported(across.ready.begin(), across.ready.end());
    reported.insert(across.pending.begin(), across.pending.end());
    reported.insert(across.pulling_nodes.begin(), across.pulling_nodes.end());
    reported.insert(across.failed_nodes.begin(), across.failed_nodes.end());
    for (const auto& [node, node_labels] : labels) {
      if (!reported.contains(node) && cacheplan::AppliesTo(item, node_labels)) {
        across.pending.push_back(node);
      }
    }
    nlohmann::ordered_json pulling = nlohmann::ordered_json::array();
    nlohmann::ordered_json failed = nlohmann::ordered_json::array();
    std::vector<std::string> details;
    for (size_t i = 0; i < across.pulling.size(); ++i) {
      const cacheplan::NodeItem& e = *across.pulling[i];
      pulling.push_back({{"node", across.pulling_nodes[i]},
                         {"bytesDone", e.bytes_done},
                         {"bytesTotal", e.bytes_total}});
      details.push_back(
          StrCat("pulling on ", across.pulling_nodes[i], ": ", changeset::FormatBytes(e.bytes_done),
                 e.bytes_total > 0 ? StrCat(" of ", changeset::FormatBytes(e.bytes_total)) : ""));
    }
    for (size_t i = 0; i < across.failed.size(); ++i) {
      failed.push_back({{"node", across.failed_nodes[i]}, {"message", across.failed[i]->message}});
    }
    for (std::string& line : FailureLines(across)) details.push_back(std::move(line));
    if (!across.pending.empty())
      details.push_back(StrCat("pending on ", Join(across.pending, ", ")));
    const size_t total =
        across.ready.size() + across.pulling.size() + across.failed.size() + across.pending.size();
    doc["items"].push_back({{"name", item.name},
                            {"type", item.type},
                            {"source", Source(item)},
                            {"ready", across.ready},
                            {"pulling", pulling},
                            {"failed", failed},
                            {"pending", across.pending}});
    // One line per detail (pulling, failed, pending), under the item's row.
    if (details.empty()) details.push_back(total == 0 ? "no node reports it yet" : "");
    rows.push_back({item.name, item.type, StrCat(across.ready.size(), "/", total), details[0]});
    for (size_t i = 1; i < details.size(); ++i) rows.push_back({"", "", "", details[i]});
  }
  const cacheplan::PlanStatus summary = cacheplan::Summarize(plan, nodes, labels, ctx.clock->Now());
  doc["summary"] =
      nlohmann::ordered_json::parse(cacheplan::PlanStatusToJson(summary)["summary"].dump());
  if (PrintDocument(ctx, flags, doc)) return 0;
  if (rows.empty()) {
    std::printf("Cache plan %s has no items\n", name.c_str());
    return 0;
  }
  // A failure's message can be long (a registry's whole answer): the line is
  // cut to 100 columns, the full text is in --json (issue 33).
  PrintTable(ctx, {"ITEM", "TYPE", "READY", "NODES"}, rows, kCacheStatusWidth);
  return 0;
}

absl::StatusOr<int> Add(Context& ctx, const ParsedFlags& flags) {
  ASSIGN_OR_RETURN(CacheItem item, ItemFromAddFlags(flags));
  const std::string plan = PlanName(flags);
  RETURN_IF_ERROR(EditPlan(
      ctx, plan, [&](std::vector<CacheItem>& items) { return AddItem(items, item, plan); }));
  std::string what = Source(item);
  if (item.image) what = cacheplan::ParseImageRef(item.image->ref)->String();
  std::printf("Added %s item %s (%s) to cache plan %s\n", item.type.c_str(), item.name.c_str(),
              what.c_str(), plan.c_str());
  return 0;
}

absl::StatusOr<int> Remove(Context& ctx, const ParsedFlags& flags) {
  std::vector<std::string> names(flags.positional.begin() + 1, flags.positional.end());
  if (names.empty()) return absl::InvalidArgumentError("use: k8shazgpu cache remove NAME...");
  const std::string plan = PlanName(flags);
  ASSIGN_OR_RETURN(std::optional<json> read, ReadPlan(ctx, plan));
  if (!read) return absl::NotFoundError(StrCat("cache plan ", plan, " does not exist"));
  RETURN_IF_ERROR(EditPlan(
      ctx, plan, [&](std::vector<CacheItem>& items) { return RemoveItems(items, names, plan); }));
  std::printf("Removed %s from cache plan %s\n", Join(names, ", ").c_str(), plan.c_str());
  return 0;
}

absl::StatusOr<int> Update(Context& ctx, const ParsedFlags& flags) {
  std::vector<std::string> names(flags.positional.begin() + 1, flags.positional.end());
  const bool all = flags.switches.contains("all");
  if (names.empty() == !all) {
    return absl::InvalidArgumentError("use: k8shazgpu cache update NAME... | --all");
  }
  const std::string plan = PlanName(flags);
  ASSIGN_OR_RETURN(std::optional<json> read, ReadPlan(ctx, plan));
  if (!read) return absl::NotFoundError(StrCat("cache plan ", plan, " does not exist"));
  const std::string now = FormatTimestamp(ctx.clock->Now());
  size_t count = 0;
  RETURN_IF_ERROR(EditPlan(ctx, plan, [&](std::vector<CacheItem>& items) {
    count = names.empty() ? items.size() : names.size();
    return RequestRefresh(items, names, now, plan);
  }));
  std::printf("Asked the nodes to refresh %zu item%s of cache plan %s (refreshRequestedAt %s)\n",
              count, count == 1 ? "" : "s", plan.c_str(), now.c_str());
  return 0;
}

absl::StatusOr<int> Cache(Context& ctx, const ParsedFlags& flags) {
  if (flags.positional.empty()) return absl::InvalidArgumentError(kUsage);
  if (flags.saw_separator) return absl::InvalidArgumentError(StrCat("unexpected '--'; ", kUsage));
  const std::string& sub = flags.positional[0];
  auto allowed = SubcommandFlags().find(sub);
  if (allowed == SubcommandFlags().end()) {
    return absl::InvalidArgumentError(
        StrCat("unknown subcommand '", sub, "' for 'cache'; ", kUsage));
  }
  for (const FlagSpec& spec : CacheFlags()) {
    if (spec.name == "plan" || !flags.Has(spec.name)) continue;
    const std::vector<std::string>& ok = allowed->second;
    if (std::find(ok.begin(), ok.end(), spec.name) == ok.end()) {
      return absl::InvalidArgumentError(
          StrCat("--", spec.name, " does not apply to 'cache ", sub, "'"));
    }
  }
  RETURN_IF_ERROR(ctx.Connect());
  if (sub == "plan") return PlanShow(ctx, flags);
  if (sub == "status") return Status(ctx, flags);
  if (sub == "add") return Add(ctx, flags);
  if (sub == "remove") return Remove(ctx, flags);
  return Update(ctx, flags);
}

}  // namespace

std::vector<FlagSpec> CacheFlags() {
  return {
      {.name = "plan",
       .has_value = true,
       .value_name = "NAME",
       .help = "the CachePlan to read or edit",
       .default_value = cacheplan::kDefaultPlan},
      {.name = "json", .short_name = 'j', .help = "status: as JSON (also -o json)"},
      {.name = "name",
       .has_value = true,
       .value_name = "NAME",
       .help = "add: the item's name (default: made from the source)"},
      {.name = "branch", .has_value = true, .value_name = "BRANCH", .help = "add repo: the branch"},
      {.name = "commit",
       .has_value = true,
       .value_name = "SHA",
       .help = "add repo: an exact commit"},
      {.name = "revision",
       .has_value = true,
       .value_name = "REV",
       .help = "add model: branch, tag or commit (default main)"},
      {.name = "allow",
       .has_value = true,
       .value_name = "PATTERN",
       .help = "add model: only files matching this glob (repeatable)",
       .repeatable = true},
      {.name = "node-selector",
       .has_value = true,
       .value_name = "K=V,...",
       .help = "add: only nodes with these labels (default: every node)",
       .repeatable = true},
      {.name = "pull-secret",
       .has_value = true,
       .value_name = "NS/NAME",
       .help = "add: the Secret with registry, git or Hugging Face credentials"},
      {.name = "all", .help = "update: every item of the plan"},
  };
}

int CacheCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, CacheFlags(), "cache", Cache);
}

}  // namespace canhazgpu::cli::k8s
