#include "cli/k8shazgpu/vllm_pod.h"

#include "absl/strings/escaping.h"
#include "core/strings.h"
#include "git/mirror.h"

namespace canhazgpu::cli::k8s {
namespace {

using nlohmann::json;

constexpr char kCacheVolume[] = "cache";
constexpr char kChangesVolume[] = "changes";
constexpr char kWorkspaceVolume[] = "workspace";
constexpr char kHubCacheVariable[] = "HF_HUB_CACHE";
constexpr char kHubOfflineVariable[] = "HF_HUB_OFFLINE";

json Mount(const char* volume, const char* path, bool read_only) {
  json mount = {{"name", volume}, {"mountPath", path}};
  if (read_only) mount["readOnly"] = true;
  return mount;
}

const json* FindNamed(const json& list, std::string_view name) {
  for (const json& item : list) {
    if (item.value("name", "") == name) return &item;
  }
  return nullptr;
}

bool SetsVariable(const json& container, std::string_view name) {
  if (!container.contains("env")) return false;
  for (const json& e : container["env"]) {
    if (e.value("name", "") == name) return true;
  }
  return false;
}

}  // namespace

std::string VllmImageFor(std::string_view image_template, std::string_view commit) {
  std::string out;
  constexpr std::string_view kPlaceholder = "{commit}";
  size_t at = 0;
  while (true) {
    const size_t found = image_template.find(kPlaceholder, at);
    out += image_template.substr(at, found - at);
    if (found == std::string_view::npos) return out;
    out += commit;
    at = found + kPlaceholder.size();
  }
}

std::vector<std::string> ChangesConfigMapNames(const RunNames& names, size_t part_count) {
  std::vector<std::string> out;
  for (size_t i = 0; i < part_count; ++i) out.push_back(StrCat(names.pod, "-changes-", i));
  return out;
}

json ChangesConfigMap(const RunNames& names, const std::string& name, std::string_view part) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", Labels(names)}}},
          {"binaryData", {{kChangesKey, absl::Base64Escape(std::string(part))}}}};
}

json ChangesVolume(const std::string& volume, const std::vector<std::string>& config_maps) {
  json sources = json::array();
  for (size_t i = 0; i < config_maps.size(); ++i) {
    sources.push_back({{"configMap",
                        {{"name", config_maps[i]},
                         {"items", {{{"key", kChangesKey}, {"path", StrCat("part-", i)}}}}}}});
  }
  return {{"name", volume}, {"projected", {{"sources", sources}}}};
}

// `text` as one single-quoted shell word.
std::string ShellWord(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string OverlayScript(std::string_view workspace, std::string_view warning) {
  // find_spec locates the installed package without importing it (vLLM's
  // import pulls in torch: seconds). Copying over it keeps the image's
  // compiled extensions and generated _version.py, which a source tree
  // lacks. An image without vLLM (or without python3) gets one line saying
  // so instead of Python's traceback (issue 33).
  const std::string tree = ShellWord(StrCat(std::string(workspace), "/", kWorkspaceTree));
  const std::string list = ShellWord(StrCat(std::string(workspace), "/", kWorkspaceChanged));
  return StrCat(
      "set -e; ",
      warning.empty()
          ? ""
          : StrCat("echo ", ShellWord(StrCat("k8shazgpu: ", std::string(warning))), " >&2; "),
      "installed=$(python3 -c 'import importlib.util, os, sys; s = "
      "importlib.util.find_spec(\"vllm\"); "
      "sys.exit(3) if s is None or s.origin is None else print(os.path.dirname(s.origin))' "
      "2>/dev/null) || { echo 'k8shazgpu: the image has no vLLM installed (python3 finds no vllm "
      "package in it); run an image with vLLM, or leave --image out' >&2; exit 1; }; "
      "while IFS= read -r line; do "
      "path=${line#? }; case \"$path\" in vllm/*) ;; *) continue ;; esac; "
      "target=\"$installed/${path#vllm/}\"; "
      "if [ \"${line%% *}\" = D ]; then rm -f \"$target\" 2>/dev/null || true; "
      "else mkdir -p \"$(dirname \"$target\")\"; rm -rf \"$target\"; cp -P ",
      tree, "/\"$path\" \"$target\"; fi; done < ", list, "; exec \"$@\"");
}

std::string RebuildScript(std::string_view workspace) {
  // The workspace is the pod's own emptyDir: the build writes there, and
  // into the container's site-packages, never into a shared cache.
  return StrCat("set -e; echo 'k8shazgpu: building vLLM from the workspace (--rebuild)' >&2; cd ",
                ShellWord(StrCat(std::string(workspace), "/", kWorkspaceTree)),
                "; python3 -m pip install --no-deps --no-build-isolation .; cd /; exec \"$@\"");
}

void UseNodeCache(json& pod, const VllmPodSettings& settings) {
  json& spec = pod["spec"];
  if (!spec.contains("volumes")) spec["volumes"] = json::array();
  if (FindNamed(spec["volumes"], kCacheVolume) == nullptr) {
    spec["volumes"].push_back(
        {{"name", kCacheVolume},
         {"hostPath", {{"path", settings.cache_root}, {"type", "Directory"}}}});
  }
  json& main = spec["containers"][0];
  if (!main.contains("volumeMounts")) main["volumeMounts"] = json::array();
  main["volumeMounts"].push_back(Mount(kCacheVolume, kCacheMount, true));
  if (!main.contains("env")) main["env"] = json::array();
  // An --env of the same name wins: the user's choice, not ours.
  if (!SetsVariable(main, kHubCacheVariable)) {
    main["env"].push_back({{"name", kHubCacheVariable}, {"value", StrCat(kCacheMount, "/hf")}});
  }
  if (settings.hf_offline && !SetsVariable(main, kHubOfflineVariable)) {
    main["env"].push_back({{"name", kHubOfflineVariable}, {"value", "1"}});
  }
}

void PinToNodes(json& pod, const std::vector<std::string>& nodes) {
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms", json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                                        {"operator", "In"},
                                                                        {"values", nodes}}})}}})}};
}

VllmPodObjects BuildVllmPodObjects(const RunRequest& request, const RunNames& names,
                                   const changeset::VllmCheckout& checkout,
                                   const std::vector<std::string>& parts,
                                   const std::vector<std::string>& compiled_paths,
                                   const VllmPodSettings& settings) {
  VllmPodObjects out;
  const std::vector<std::string> map_names = ChangesConfigMapNames(names, parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    out.config_maps.push_back(ChangesConfigMap(names, map_names[i], parts[i]));
  }

  if (!compiled_paths.empty()) {
    std::string shown;
    for (size_t i = 0; i < compiled_paths.size() && i < 5; ++i) {
      shown += StrCat(i == 0 ? "" : ", ", compiled_paths[i]);
    }
    if (compiled_paths.size() > 5) shown += StrCat(" and ", compiled_paths.size() - 5, " more");
    out.warning =
        settings.rebuild
            ? StrCat("compiled code changed (", shown, "): --rebuild builds vLLM in the pod")
            : StrCat("warning: compiled code changed (", shown, "): the pod runs the ",
                     "merge-base's compiled code; only Python changes take effect (--rebuild ",
                     "builds them)");
  }

  out.pod = PodObject(request, names);
  json& spec = out.pod["spec"];
  UseNodeCache(out.pod, settings);
  spec["volumes"].push_back(ChangesVolume(kChangesVolume, map_names));
  spec["volumes"].push_back({{"name", kWorkspaceVolume}, {"emptyDir", json::object()}});

  const std::string mirror = StrCat(kCacheMount, "/git/", git::MirrorDirName(checkout.remote_url));
  // The pod's restartPolicy is Never: a failed unpack fails the pod, and
  // its log (the rejected paths) becomes the termination message.
  spec["initContainers"] = json::array(
      {{{"name", kWorkspaceContainer},
        {"image", settings.node_image},
        {"command",
         {"/usr/local/bin/k8shazgpu", "vllm", "unpack", "--parts", kChangesMount, "--mirror",
          EscapeDollars(mirror), "--commit", checkout.merge_base, "--to",
          StrCat(kWorkspaceMount, "/", kWorkspaceTree), "--list",
          StrCat(kWorkspaceMount, "/", kWorkspaceChanged)}},
        {"terminationMessagePolicy", "FallbackToLogsOnError"},
        {"volumeMounts",
         {Mount(kCacheVolume, kCacheMount, true), Mount(kChangesVolume, kChangesMount, true),
          Mount(kWorkspaceVolume, kWorkspaceMount, false)}}}});

  json& main = spec["containers"][0];
  main["image"] = VllmImageFor(settings.vllm_image_template, checkout.merge_base);
  // sh -c SCRIPT sh ARGV...: "$@" is the argv, each word as given (already
  // escaped for Kubernetes by PodObject); the script is escaped the same way.
  const std::string script = settings.rebuild ? RebuildScript(kWorkspaceMount)
                                              : OverlayScript(kWorkspaceMount, out.warning);
  json command = {"/bin/sh", "-c", EscapeDollars(script), "sh"};
  for (const json& word : main["command"]) command.push_back(word);
  main["command"] = command;
  main["volumeMounts"].push_back(Mount(kWorkspaceVolume, kWorkspaceMount, false));
  return out;
}

}  // namespace canhazgpu::cli::k8s
