// The vLLM pod built from a developer's checkout (issue 18, ADR 0009): the
// change set bundle travels in ConfigMaps; an init container exports the
// merge-base from the node's git mirror into an emptyDir workspace and
// applies the change set there (`k8shazgpu vllm unpack`); the main
// container runs the vLLM image of that merge-base with the workspace's
// Python package copied over the installed one, the node's Hugging Face
// cache mounted read-only, and the user's argv unchanged.
// Pure functions: the objects as JSON, checked against Kubernetes 1.34's
// schemas in vllm_pod_test.cc. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "changeset/vllm_checkout.h"
#include "cli/k8shazgpu/run_objects.h"
#include "cli/k8shazgpu/run_request.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::cli::k8s {

// The k8shazgpu-node image of this release: it holds /usr/local/bin/k8shazgpu,
// which the init containers that unpack a bundle run.
inline constexpr char kDefaultNodeImage[] = "ghcr.io/canhazgpu/k8shazgpu-node:0.1.0";

struct VllmPodSettings {
  // Runs the init container; must hold /usr/local/bin/k8shazgpu.
  std::string node_image = kDefaultNodeImage;
  // The main container's image; "{commit}" becomes the merge-base (40 hex
  // digits), so the installed compiled code matches the checkout's base.
  std::string vllm_image_template = "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:{commit}";
  // The node cache agent's root (cacheagent/fetchers.h): git/<mirror>, hf.
  std::string cache_root = "/var/lib/canhazgpu/cache";
  // Build vLLM from the workspace (pip install) instead of overlaying its
  // Python package: for changes to compiled code; needs an image with the
  // build tools, and takes as long as vLLM's build.
  bool rebuild = false;
  // HF_HUB_OFFLINE=1: the served model is Ready in the node's cache, so
  // vLLM must not reach the Hub (and does not wait on it).
  bool hf_offline = false;
};

// Where the pod's containers see things.
inline constexpr char kCacheMount[] = "/cache";
inline constexpr char kChangesMount[] = "/changes";
inline constexpr char kWorkspaceMount[] = "/workspace";
inline constexpr char kWorkspaceContainer[] = "workspace";
// Inside the workspace: the repository as the developer has it, and the
// list of the paths that changed ("M path" / "D path" lines).
inline constexpr char kWorkspaceTree[] = "tree";
inline constexpr char kWorkspaceChanged[] = "changed";
// The key of the bundle part in each ConfigMap.
inline constexpr char kChangesKey[] = "part";

struct VllmPodObjects {
  // `<pod>-changes-<i>`, one per part, labelled like the run's other
  // objects; create them before the pod (the kubelet waits for them
  // otherwise) and give them the pod as owner once it exists.
  std::vector<nlohmann::json> config_maps;
  nlohmann::json pod;
  // Non-empty when the change set touches compiled code: one line for
  // `vllm run` to print, naming the paths the overlay cannot pick up.
  std::string warning;
};

// The vLLM image for `commit`: every "{commit}" in `image_template`
// replaced.
std::string VllmImageFor(std::string_view image_template, std::string_view commit);

// The names of the ConfigMaps that carry `part_count` parts of a bundle.
std::vector<std::string> ChangesConfigMapNames(const RunNames& names, size_t part_count);

// The ConfigMap `name` holding one bundle part under kChangesKey, labelled
// as the run's other objects (`run`'s working directory uses it too).
nlohmann::json ChangesConfigMap(const RunNames& names, const std::string& name,
                                std::string_view part);

// A projected volume `volume` with the parts in `config_maps` as files
// part-0, part-1, ... in one directory, as `vllm unpack --parts` reads them
// (the ConfigMaps' keys are all kChangesKey).
nlohmann::json ChangesVolume(const std::string& volume,
                             const std::vector<std::string>& config_maps);

// The run's pod (PodObject(request, names)) with the workspace built from
// `checkout`'s merge-base and the bundle's `parts` (SplitIntoParts of the
// bundle at kConfigMapPartSize), the image replaced by the template's.
// `compiled_paths` is changeset::TouchesCompiledCode of the change set.
VllmPodObjects BuildVllmPodObjects(const RunRequest& request, const RunNames& names,
                                   const changeset::VllmCheckout& checkout,
                                   const std::vector<std::string>& parts,
                                   const std::vector<std::string>& compiled_paths,
                                   const VllmPodSettings& settings);

// The node cache in a pod that runs no checkout: the cache root mounted
// read-only at kCacheMount, HF_HUB_CACHE at its models (unless --env set
// it) and HF_HUB_OFFLINE as `settings` says. BuildVllmPodObjects does this
// too.
void UseNodeCache(nlohmann::json& pod, const VllmPodSettings& settings);

// Required node affinity: the pod may run only on `nodes` (by name) - the
// nodes whose caches are ready.
void PinToNodes(nlohmann::json& pod, const std::vector<std::string>& nodes);

// The main container's wrapper script: applies the changed paths under
// vllm/ (the workspace's list) to the installed package (found with
// python3) - files copied from the workspace's tree, deleted ones removed -
// then `exec "$@"` (the argv after `sh`, unchanged). Only what changed is
// copied: a vLLM tree is thousands of files. `warning`, when not empty, is printed to stderr first
// so that the pod's log says it too. Before Kubernetes' $-escaping.
std::string OverlayScript(std::string_view workspace, std::string_view warning = "");

// With --rebuild: installs vLLM from `workspace` with pip (no build
// isolation, no dependency changes), then `exec "$@"`.
std::string RebuildScript(std::string_view workspace);

}  // namespace canhazgpu::cli::k8s
