#include "simkubelet/cdi_devices.h"

#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "core/file_read.h"
#include "core/strings.h"
#include "kubesim/patch.h"
#include "nlohmann/json.hpp"
#include "yaml/yaml_json.h"

namespace canhazgpu::simkubelet {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// CDI spec files are small; anything larger is not one.
constexpr uintmax_t kMaxSpecBytes = 4 << 20;

// Every spec in `dir` by kind ("vendor/class"), in file name order.
std::multimap<std::string, json> LoadSpecs(const std::string& dir) {
  std::set<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension();
    if ((ext == ".json" || ext == ".yaml") && e.is_regular_file(ec) &&
        e.file_size(ec) <= kMaxSpecBytes) {
      files.insert(e.path());
    }
  }
  std::multimap<std::string, json> specs;
  for (const fs::path& file : files) {
    absl::StatusOr<std::string> text = ReadRegularFile(file.string(), kMaxSpecBytes, "CDI spec");
    if (!text.ok()) continue;
    // YAML is a superset of JSON: one parser for both.
    absl::StatusOr<json> spec = yaml::ToJson(*text);
    if (!spec.ok() || !spec->is_object() || !spec->contains("kind") ||
        !(*spec)["kind"].is_string()) {
      continue;
    }
    specs.emplace((*spec)["kind"].get<std::string>(), std::move(*spec));
  }
  return specs;
}

void Collect(const json& edits, CdiEdits& out) {
  if (!edits.is_object()) return;
  for (const json& e : edits.value("env", json::array())) {
    if (e.is_string()) out.env.push_back(e.get<std::string>());
  }
  for (const json& node : edits.value("deviceNodes", json::array())) {
    if (node.is_object() && node.contains("path") && node["path"].is_string()) {
      out.device_nodes.push_back(node["path"].get<std::string>());
    }
  }
  for (const json& m : edits.value("mounts", json::array())) {
    if (m.is_object() && m.value("hostPath", json()).is_string() &&
        m.value("containerPath", json()).is_string()) {
      out.mounts.push_back(
          StrCat(m["hostPath"].get<std::string>(), ":", m["containerPath"].get<std::string>()));
    }
  }
}

}  // namespace

absl::StatusOr<CdiEdits> ResolveCdiDevices(const std::string& cdi_dir,
                                           const std::vector<std::string>& ids) {
  if (ids.empty()) return CdiEdits{};
  const std::multimap<std::string, json> specs = LoadSpecs(cdi_dir);
  std::vector<std::pair<const json*, const json*>> found;  // spec, device
  std::vector<std::string> unresolved;
  for (const std::string& id : ids) {
    const size_t eq = id.find('=');
    const json* device = nullptr;
    const json* spec_of_device = nullptr;
    if (eq != std::string::npos) {
      const std::string kind = id.substr(0, eq);
      const std::string name = id.substr(eq + 1);
      auto [begin, end] = specs.equal_range(kind);
      for (auto it = begin; it != end && device == nullptr; ++it) {
        // By reference: `found` keeps pointers into the specs.
        const json& spec = it->second;
        if (!spec.contains("devices") || !spec["devices"].is_array()) continue;
        for (const json& d : spec["devices"]) {
          if (d.is_object() && d.value("name", json()) == name) {
            device = &d;
            spec_of_device = &spec;
            break;
          }
        }
      }
    }
    if (device == nullptr) {
      unresolved.push_back(id);
    } else {
      found.emplace_back(spec_of_device, device);
    }
  }
  if (!unresolved.empty()) {
    return absl::NotFoundError(StrCat("unresolvable CDI devices ", Join(unresolved, ", ")));
  }
  CdiEdits edits;
  std::set<const json*> applied_specs;
  for (const auto& [spec, device] : found) {
    if (applied_specs.insert(spec).second) Collect(spec->value("containerEdits", json()), edits);
  }
  for (const auto& [spec, device] : found) {
    Collect(device->value("containerEdits", json()), edits);
  }
  return edits;
}

}  // namespace canhazgpu::simkubelet
