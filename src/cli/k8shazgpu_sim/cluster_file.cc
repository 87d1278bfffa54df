#include "cli/k8shazgpu_sim/cluster_file.h"

#include "core/strings.h"
#include "kubesim/patch.h"
#include "nlohmann/json.hpp"
#include "yaml/yaml_json.h"

namespace canhazgpu::sim {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& where, const std::string& why) {
  return absl::InvalidArgumentError(StrCat("cluster file ", where, ": ", why));
}

// The integer `key` of `entry` in [low, high], or `fallback` when absent.
absl::StatusOr<int> IntIn(const json& entry, const char* key, const std::string& where, int low,
                          int high, int fallback) {
  if (!entry.contains(key)) return fallback;
  const json& value = entry[key];
  if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high) {
    return Bad(StrCat(where, ".", key), StrCat("must be a whole number from ", low, " to ", high));
  }
  return value.get<int>();
}

absl::Status CheckKeys(const json& entry, const std::string& where,
                       std::initializer_list<const char*> known) {
  if (!entry.is_object()) return Bad(where, "must be a mapping");
  for (const auto& [key, value] : entry.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) return Bad(StrCat(where, ".", key), "unknown field");
  }
  return absl::OkStatus();
}

absl::StatusOr<SimulatedHostShape> ParseNode(const json& entry, const std::string& where) {
  if (absl::Status s = CheckKeys(entry, where, {"model", "gpus", "count", "mig"}); !s.ok())
    return s;
  SimulatedHostShape shape;
  if (entry.contains("model")) {
    if (!entry["model"].is_string()) return Bad(StrCat(where, ".model"), "must be a string");
    shape.model = entry["model"];
  }
  absl::StatusOr<int> gpus = IntIn(entry, "gpus", where, 1, kMaxSimGpusPerNode, 4);
  if (!gpus.ok()) return gpus.status();
  shape.gpus = *gpus;
  const json mig = entry.value("mig", json::array());
  if (!mig.is_array()) return Bad(StrCat(where, ".mig"), "must be a list");
  for (size_t i = 0; i < mig.size(); ++i) {
    const std::string at = StrCat(where, ".mig[", i, "]");
    if (absl::Status s = CheckKeys(mig[i], at, {"gpu", "profiles"}); !s.ok()) return s;
    if (!mig[i].contains("gpu")) return Bad(StrCat(at, ".gpu"), "required");
    absl::StatusOr<int> gpu = IntIn(mig[i], "gpu", at, 0, shape.gpus - 1, 0);
    if (!gpu.ok()) return gpu.status();
    if (shape.mig.contains(*gpu)) return Bad(StrCat(at, ".gpu"), StrCat("GPU ", *gpu, " twice"));
    const json profiles = mig[i].value("profiles", json());
    if (!profiles.is_array() || profiles.empty())
      return Bad(StrCat(at, ".profiles"), "must be a non-empty list of MIG profiles");
    std::vector<std::string>& names = shape.mig[*gpu];
    for (const json& p : profiles) {
      if (!p.is_string()) return Bad(StrCat(at, ".profiles"), "must be a list of strings");
      names.push_back(p);
    }
  }
  if (absl::Status s = CheckHostShape(shape); !s.ok()) return Bad(where, std::string(s.message()));
  return shape;
}

}  // namespace

absl::StatusOr<std::vector<SimulatedHostShape>> ParseClusterFile(const std::string& text) {
  absl::StatusOr<json> doc = yaml::ToJson(text);
  if (!doc.ok()) return Bad("not YAML or JSON", std::string(doc.status().message()));
  if (absl::Status s = CheckKeys(*doc, "(top)", {"nodes"}); !s.ok()) return s;
  const json nodes = doc->value("nodes", json());
  if (!nodes.is_array() || nodes.empty()) return Bad("nodes", "must be a non-empty list");
  std::vector<SimulatedHostShape> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = StrCat("nodes[", i, "]");
    absl::StatusOr<SimulatedHostShape> shape = ParseNode(nodes[i], where);
    if (!shape.ok()) return shape.status();
    absl::StatusOr<int> count = IntIn(nodes[i], "count", where, 1, kMaxSimNodes, 1);
    if (!count.ok()) return count.status();
    for (int n = 0; n < *count; ++n) out.push_back(*shape);
    if (out.size() > static_cast<size_t>(kMaxSimNodes))
      return Bad("nodes", StrCat("more than ", kMaxSimNodes, " nodes"));
  }
  return out;
}

}  // namespace canhazgpu::sim
