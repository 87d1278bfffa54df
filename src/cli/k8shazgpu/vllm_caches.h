// What `k8shazgpu vllm run` wants cached before its pod starts, and how far
// the nodes are: the vLLM image, the checkout's upstream repository at the
// merge-base (the init container exports it from the node's mirror) and
// the served model (read from `vllm serve MODEL` / `--model`). The items
// join the CachePlan when missing - an item already there for the same
// source is used under its own name - and the nodes' NodeCacheStatus
// reports say which nodes have them all Ready, or which node is warming
// and how far along it is. Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cacheplan/types.h"

namespace canhazgpu::cli::k8s {

// A Hugging Face model the command serves.
struct ServedModel {
  std::string repo_id;
  std::string revision;  // --revision, or "" (main)
  bool operator==(const ServedModel&) const = default;
};

// The model of `vllm serve MODEL ...`, or of `--model X` / `--model=X`
// anywhere in `argv` (python -m vllm.entrypoints.openai.api_server), with
// `--revision`. nullopt when there is none, or when it is a local path
// (starts with '/', '.' or '~') or not a repository id.
std::optional<ServedModel> ParseServedModel(const std::vector<std::string>& argv);

// The sources a run wants; each optional.
struct WantedSources {
  std::string image;        // the container's image
  std::string repo_url;     // the checkout's upstream, with
  std::string repo_commit;  // the merge-base
  std::optional<ServedModel> model;
};

// One item per wanted source, named cacheplan::DefaultItemName's way:
// image, then repo, then model.
std::vector<cacheplan::CacheItem> WantedItems(const WantedSources& sources);

// Whether `existing` caches what `wanted` asks for: the same image (as
// references, so "vllm/x" and "docker.io/vllm/x:latest" meet), the same
// repository URL at the same commit, the same model and revision with no
// allow-list (a partial download is not the model). Scope and secrets
// aside: the readiness check reads scopes from the reports.
bool SameSource(const cacheplan::CacheItem& existing, const cacheplan::CacheItem& wanted);

// Adds to `plan_items` each of `wanted` that no item there caches already,
// renaming it ("-2", "-3", ...) when its name is taken by another source;
// afterwards every wanted item carries the name it has in the plan.
// Returns whether `plan_items` changed.
bool AddMissingItems(std::vector<cacheplan::CacheItem>& plan_items,
                     std::vector<cacheplan::CacheItem>& wanted);

// The wanted items across the nodes that run the cache agent (those with
// a NodeCacheStatus), restricted to `only_node` when set.
struct CacheReadiness {
  // Nodes with every wanted item Ready, in name order.
  std::vector<std::string> ready_nodes;
  // Per wanted item (by name) that failed on every candidate node where it
  // applies: "node-0: <message>" of the first such node.
  std::map<std::string, std::string> failed_everywhere;
  // One line for the person waiting: the node closest to ready and how far
  // along it is ("node-1 is warming (1 of 3 ready): image vllm-openai
  // Pulling 1.2 GiB of 8.0 GiB (15%); model qwen Pending"); "" when a node
  // is ready.
  std::string progress;
  // No node runs the cache agent (or none named `only_node`).
  bool no_agent = false;
};
CacheReadiness AssessCaches(const std::vector<cacheplan::CacheItem>& wanted,
                            const std::string& plan,
                            const std::vector<cacheplan::NodeCacheStatus>& nodes,
                            const std::map<std::string, cacheplan::Labels>& node_labels,
                            const std::string& only_node);

// The line shown while waiting for the caches: "waiting for the node
// caches: " and the progress, cut with "…" to `width` columns after the
// "k8shazgpu: " prefix (an item's name and a runtime's error can each be
// longer than a line; `cache status --json` has the full text).
std::string CacheProgressLine(const CacheReadiness& readiness, size_t width = 100);

// The lines saying that no node can pull `image` (the failure `reason`,
// "node-0: <message>") and that `fallback` runs instead, each within
// `width` columns after the "k8shazgpu: " prefix where the image names
// allow: the image named once, on a line of its own, the runtime's message
// with every further mention of it as "it", cut with "…" (the full text is
// in `cache status --json`).
std::vector<std::string> ImageFallbackLines(const std::string& image, const std::string& reason,
                                            const std::string& fallback, size_t width = 100);

}  // namespace canhazgpu::cli::k8s
