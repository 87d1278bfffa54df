// Finds the vLLM checkout a developer is in and the commit their work
// branches from: the merge-base of HEAD with the upstream's main branch,
// computed locally with libgit2 (the network only when asked to fetch).
// Unlike the prototype (reference/canhazgpu.md §6.5) it works from any
// directory inside the work tree, requires vLLM's own package rather than a
// pyproject that mentions it, and finds the upstream under any remote name.
//
// Thread safety: each call opens its own repository; calls may run on
// distinct threads.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::changeset {

struct VllmCheckout {
  std::filesystem::path top_level;  // the work tree's top directory
  std::string remote_name;          // "upstream", "origin", ...
  // The upstream's URL; a local path ("/srv/vllm.git") as file:///srv/vllm.git,
  // so that the cache plan, the node's mirror and the output all name it the
  // one way the plan accepts (LocalPathAsFileUrl).
  std::string remote_url;
  std::string upstream_ref;  // "refs/remotes/upstream/main"
  std::string head;          // 40 hex digits
  std::string branch;        // "my-feature"; empty on a detached HEAD
  std::string merge_base;    // 40 hex digits
};

// True for the URLs of github.com/vllm-project/vllm in any usual spelling:
// https or ssh (git@github.com:vllm-project/vllm.git), with or without
// .git, and a local path ending in vllm-project/vllm(.git).
bool IsVllmUpstreamUrl(std::string_view url);

// A git remote URL as a URL: a local path (what git takes as one: no "://",
// no ':' before the first '/') becomes file:// with an absolute path, a
// relative one taken from `base` (the work tree's top); any other URL
// ("https://...", "git@host:path", "file:///x") is returned as it is.
std::string LocalPathAsFileUrl(std::string_view url, const std::filesystem::path& base);

// Whether `dir` is inside a git work tree whose top level holds
// vllm/__init__.py: what `vllm run` asks before it packages the changes
// (DetectVllmCheckout then says what is wrong with one that is).
bool IsInsideVllmCheckout(const std::filesystem::path& dir);

// The checkout around `dir` (any directory inside the work tree). With
// `fetch`, the upstream remote is fetched first (ssh-agent and the URL's own
// credentials; nothing prompts). FailedPrecondition, in one line saying
// what to do, for: not a git work tree, no vllm/__init__.py at the top, no
// upstream remote, no main branch for it, no merge base.
absl::StatusOr<VllmCheckout> DetectVllmCheckout(const std::filesystem::path& dir, bool fetch);

}  // namespace canhazgpu::changeset
