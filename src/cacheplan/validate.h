// What makes a CachePlan item acceptable before it is written: the checks
// the CRD schema cannot express (a parsable image reference, a git URL the
// node can fetch, a Hugging Face repository id, branch or commit but not
// both, names unique in the plan), each failing with one line that names
// the item and says what to change. Also the default name the CLI gives an
// item. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cacheplan/types.h"

namespace canhazgpu::cacheplan {

// What a node accepts beyond the syntax.
struct ItemRules {
  // file:// repositories. The node agent runs as root: a plan naming a
  // local path would copy files only root may read into a cache every
  // local user and pod reads. Off except in tests and simulated clusters,
  // whose "remote" repositories are directories on the same machine.
  bool allow_local_git = false;
};

// InvalidArgument naming the item and the first problem found.
absl::Status ValidateItem(const CacheItem& item, const ItemRules& rules = {});

// Every item valid, and no two with the same name (InvalidArgument naming
// the duplicate).
absl::Status Validate(const CachePlan& plan, const ItemRules& rules = {});
absl::Status ValidateItems(const std::vector<CacheItem>& items, const ItemRules& rules = {});

// Whether `name` is an acceptable item name (a DNS label: lowercase
// letters, digits and '-', 1 to 63, starting and ending alphanumeric).
bool IsItemName(std::string_view name);

// A name for an item made from its source, for `k8shazgpu cache add`
// without --name: the image's last repository component and tag
// ("vllm-openai-v0-6-3"), the repository's owner and name with the branch
// or short commit ("vllm-project-vllm-main"), the model's id with a
// non-main revision ("qwen-qwen2-5-0-5b"). Always a valid item name;
// "item" when the source yields nothing.
std::string DefaultItemName(const CacheItem& item);

// Whether `text` is an RFC 3339 date-time ("2026-11-24T10:00:00Z",
// fractions and offsets allowed).
bool IsRfc3339(std::string_view text);

}  // namespace canhazgpu::cacheplan
