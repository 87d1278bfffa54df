// The edits `k8shazgpu cache add|remove|update` make to a CachePlan's
// items, and the item `add` builds from its words and flags. Pure
// functions over cacheplan values, so an edit can be applied again to a
// fresh read after a 409 Conflict; each fails with one line (unknown item,
// duplicate name, invalid reference) and then leaves the items as they
// were. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheplan/types.h"
#include "cli/common/flags.h"

namespace canhazgpu::cli::k8s {

// `add image REF | repo URL | model REPO_ID` with --name, --branch,
// --commit, --revision, --allow, --node-selector k=v,..., --pull-secret
// ns/name: the item, validated, named DefaultItemName's way without
// --name. InvalidArgument for flags of another kind (--branch on an image).
absl::StatusOr<cacheplan::CacheItem> ItemFromAddFlags(const ParsedFlags& flags);

// Adds `item`; AlreadyExists when the plan has an item of that name.
absl::Status AddItem(std::vector<cacheplan::CacheItem>& items, const cacheplan::CacheItem& item,
                     const std::string& plan);

// Removes the named items; NotFound naming every name the plan lacks
// (nothing removed then).
absl::Status RemoveItems(std::vector<cacheplan::CacheItem>& items,
                         const std::vector<std::string>& names, const std::string& plan);

// Sets refreshRequestedAt to `now` (RFC 3339) on the named items, or on
// all when `names` is empty; NotFound as RemoveItems.
absl::Status RequestRefresh(std::vector<cacheplan::CacheItem>& items,
                            const std::vector<std::string>& names, const std::string& now,
                            const std::string& plan);

// The JSON of spec.items after an edit: an item the edit left unchanged
// keeps its JSON as read, and a changed one keeps the top-level fields we
// do not model, so what a newer writer added survives our edits.
nlohmann::json MergeItemsJson(const nlohmann::json& read_items,
                              const std::vector<cacheplan::CacheItem>& items);

}  // namespace canhazgpu::cli::k8s
