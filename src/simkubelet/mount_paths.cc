#include "simkubelet/mount_paths.h"

#include <algorithm>

namespace canhazgpu::simkubelet {
namespace {

// Characters after which a path may begin inside a word or a script.
bool StartsAPath(char c) { return c == ' ' || c == '\'' || c == '"' || c == '=' || c == ':'; }

// Characters that may end the mount path itself: a deeper path, or the end
// of a word, quote, list entry or shell command.
bool EndsAMountPath(char c) {
  return c == '/' || c == ' ' || c == '\'' || c == '"' || c == ':' || c == ';';
}

std::string_view WithoutTrailingSlash(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path;
}

}  // namespace

std::string RewriteMountPaths(std::string_view text, const std::vector<MountPoint>& mounts) {
  // Longest first, so /cache/hf wins over /cache where both are mounted.
  std::vector<std::pair<std::string_view, const std::string*>> order;
  for (const MountPoint& m : mounts) {
    std::string_view path = WithoutTrailingSlash(m.mount_path);
    if (path.size() > 1 && path.front() == '/') order.emplace_back(path, &m.host_path);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    bool replaced = false;
    if (text[i] == '/' && (i == 0 || StartsAPath(text[i - 1]))) {
      for (const auto& [path, host] : order) {
        const size_t end = i + path.size();
        if (text.compare(i, path.size(), path) != 0) continue;
        if (end < text.size() && !EndsAMountPath(text[end])) continue;
        out += *host;
        i = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

void RewriteEnvironment(std::vector<std::string>& env, const std::vector<MountPoint>& mounts) {
  for (std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    entry =
        entry.substr(0, eq + 1) + RewriteMountPaths(std::string_view(entry).substr(eq + 1), mounts);
  }
}

std::string WorkingDirectory(std::string_view working_dir, const std::vector<MountPoint>& mounts,
                             std::string_view container_dir) {
  if (working_dir.empty()) return std::string(container_dir);
  // Only a whole path is a working directory: the rewriting of words does.
  const std::string mounted = RewriteMountPaths(working_dir, mounts);
  if (mounted != working_dir) return mounted;
  return std::string(container_dir) + std::string(working_dir);
}

}  // namespace canhazgpu::simkubelet
