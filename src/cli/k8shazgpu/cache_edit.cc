#include "cli/k8shazgpu/cache_edit.h"

#include <map>
#include <set>

#include "cacheplan/validate.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

using cacheplan::CacheItem;
using nlohmann::json;

absl::Status OnlyFor(const ParsedFlags& flags, const std::string& kind,
                     const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (flags.Has(name)) {
      return absl::InvalidArgumentError(
          StrCat("--", name, " does not apply to 'cache add ", kind, "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<cacheplan::Labels> ParseSelector(const std::vector<std::string>& pairs) {
  cacheplan::Labels labels;
  for (const std::string& value : pairs) {
    for (std::string_view part : Split(value, ',', /*skip_empty=*/true)) {
      const std::string pair(part);
      size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            StrCat("--node-selector wants KEY=VALUE pairs separated by commas, not '", pair, "'"));
      }
      labels[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
  }
  return labels;
}

std::string MissingNames(const std::vector<CacheItem>& items,
                         const std::vector<std::string>& names) {
  std::set<std::string> have;
  for (const CacheItem& item : items) have.insert(item.name);
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    if (!have.contains(name)) missing.push_back(name);
  }
  return Join(missing, ", ");
}

absl::Status NotInPlan(const std::string& missing, const std::string& plan) {
  return absl::NotFoundError(StrCat("cache plan ", plan, " has no item ", missing,
                                    "; 'k8shazgpu cache plan show' lists its items"));
}

}  // namespace

absl::StatusOr<CacheItem> ItemFromAddFlags(const ParsedFlags& flags) {
  const std::vector<std::string>& words = flags.positional;
  // positional[0] is "add".
  if (words.size() != 3) {
    return absl::InvalidArgumentError(
        "use: k8shazgpu cache add image REF | repo URL [--branch B | --commit C] | model REPO_ID "
        "[--revision R] [--allow PATTERN]...");
  }
  const std::string& kind = words[1];
  const std::string& source = words[2];
  CacheItem item;
  if (kind == "image") {
    RETURN_IF_ERROR(OnlyFor(flags, kind, {"branch", "commit", "revision", "allow"}));
    item.type = cacheplan::kImage;
    item.image = cacheplan::ImageSource{.ref = source};
  } else if (kind == "repo") {
    RETURN_IF_ERROR(OnlyFor(flags, kind, {"revision", "allow"}));
    item.type = cacheplan::kGitRepo;
    item.git_repo = cacheplan::GitRepoSource{.url = source,
                                             .branch = flags.Value("branch").value_or(""),
                                             .commit = flags.Value("commit").value_or("")};
  } else if (kind == "model") {
    RETURN_IF_ERROR(OnlyFor(flags, kind, {"branch", "commit"}));
    item.type = cacheplan::kHfModel;
    item.hf_model = cacheplan::HfModelSource{.repo_id = source,
                                             .revision = flags.Value("revision").value_or("main"),
                                             .allow_patterns = flags.Values("allow")};
  } else {
    return absl::InvalidArgumentError(
        StrCat("unknown kind '", kind, "' for 'cache add'; use image, repo or model"));
  }
  ASSIGN_OR_RETURN(item.node_selector, ParseSelector(flags.Values("node-selector")));
  if (std::optional<std::string> secret = flags.Value("pull-secret")) {
    size_t slash = secret->find('/');
    if (slash == std::string::npos) {
      return absl::InvalidArgumentError(
          StrCat("--pull-secret wants NAMESPACE/NAME, not '", *secret, "'"));
    }
    item.pull_secret = cacheplan::SecretRef{.namespace_name = secret->substr(0, slash),
                                            .name = secret->substr(slash + 1)};
  }
  item.name = flags.Value("name").value_or(cacheplan::DefaultItemName(item));
  RETURN_IF_ERROR(cacheplan::ValidateItem(item));
  return item;
}

absl::Status AddItem(std::vector<CacheItem>& items, const CacheItem& item,
                     const std::string& plan) {
  for (const CacheItem& existing : items) {
    if (existing.name == item.name) {
      return absl::AlreadyExistsError(StrCat(
          "cache plan ", plan, " already has an item named '", item.name,
          "'; choose another with --name, or 'k8shazgpu cache remove ", item.name, "' first"));
    }
  }
  items.push_back(item);
  return absl::OkStatus();
}

absl::Status RemoveItems(std::vector<CacheItem>& items, const std::vector<std::string>& names,
                         const std::string& plan) {
  if (std::string missing = MissingNames(items, names); !missing.empty()) {
    return NotInPlan(missing, plan);
  }
  std::set<std::string> drop(names.begin(), names.end());
  std::erase_if(items, [&](const CacheItem& item) { return drop.contains(item.name); });
  return absl::OkStatus();
}

absl::Status RequestRefresh(std::vector<CacheItem>& items, const std::vector<std::string>& names,
                            const std::string& now, const std::string& plan) {
  if (std::string missing = MissingNames(items, names); !missing.empty()) {
    return NotInPlan(missing, plan);
  }
  std::set<std::string> chosen(names.begin(), names.end());
  for (CacheItem& item : items) {
    if (names.empty() || chosen.contains(item.name)) item.refresh_requested_at = now;
  }
  return absl::OkStatus();
}

json MergeItemsJson(const json& read_items, const std::vector<CacheItem>& items) {
  std::map<std::string, json> as_read;
  if (read_items.is_array()) {
    for (const json& j : read_items) {
      absl::StatusOr<CacheItem> item = cacheplan::ItemFromJson(j);
      if (item.ok()) as_read[item->name] = j;
    }
  }
  json out = json::array();
  for (const CacheItem& item : items) {
    auto it = as_read.find(item.name);
    if (it == as_read.end()) {
      out.push_back(cacheplan::ItemToJson(item));
    } else if (cacheplan::ItemFromJson(it->second).value() == item) {
      out.push_back(it->second);
    } else {
      // Our fields replaced, another writer's top-level fields kept.
      json merged = it->second;
      for (const char* key : {"name", "type", "image", "gitRepo", "hfModel", "scope",
                              "pullSecretRef", "refreshRequestedAt"}) {
        merged.erase(key);
      }
      merged.update(cacheplan::ItemToJson(item));
      out.push_back(merged);
    }
  }
  return out;
}

}  // namespace canhazgpu::cli::k8s
