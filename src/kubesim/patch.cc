#include "kubesim/patch.h"

#include "core/strings.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

bool AllNamed(const json& list) {
  if (!list.is_array() || list.empty()) return false;
  for (const json& e : list) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) return false;
  }
  return true;
}

bool IsDirective(const std::string& key) {
  return key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") ||
         key.starts_with("$deleteFromPrimitiveList/");
}

json StrategicMerge(const json& original, const json& patch);

json MergeNamedLists(const json& original, const json& patch) {
  json out = original;
  for (const json& element : patch) {
    const std::string name = element["name"];
    auto it = std::find_if(out.begin(), out.end(), [&](const json& e) {
      return e.is_object() && e.value("name", "") == name;
    });
    const bool remove = element.value("$patch", "") == "delete";
    if (it == out.end()) {
      if (!remove) out.push_back(StrategicMerge(json::object(), element));
    } else if (remove) {
      out.erase(it);
    } else {
      *it = StrategicMerge(*it, element);
    }
  }
  return out;
}

json StrategicMerge(const json& original, const json& patch) {
  if (!patch.is_object()) return patch;
  json out = original.is_object() ? original : json::object();
  for (const auto& [key, value] : patch.items()) {
    if (IsDirective(key)) continue;
    if (value.is_null()) {
      out.erase(key);
    } else if (value.is_object()) {
      out[key] = StrategicMerge(out.contains(key) ? out[key] : json::object(), value);
    } else if (value.is_array() && AllNamed(value) && out.contains(key) && AllNamed(out[key])) {
      out[key] = MergeNamedLists(out[key], value);
    } else if (value.is_array()) {
      json list = json::array();
      for (const json& e : value) {
        if (e.is_object() && e.value("$patch", "") == "delete") continue;
        list.push_back(e.is_object() ? StrategicMerge(json::object(), e) : e);
      }
      out[key] = std::move(list);
    } else {
      out[key] = value;
    }
  }
  return out;
}

}  // namespace

std::optional<PatchType> PatchTypeOf(const std::string& content_type) {
  const std::string type = content_type.substr(0, content_type.find(';'));
  if (type == "application/merge-patch+json") return PatchType::kMerge;
  if (type == "application/json-patch+json") return PatchType::kJson;
  if (type == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (type == "application/apply-patch+yaml") return PatchType::kApply;
  return std::nullopt;
}

absl::StatusOr<json> ParsePatchBody(PatchType type, const std::string& body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    if (type != PatchType::kApply) return absl::InvalidArgumentError("the patch is not JSON");
    auto from_yaml = yaml::ToJson(body);
    if (!from_yaml.ok())
      return absl::InvalidArgumentError(
          StrCat("the patch is not YAML: ", from_yaml.status().message()));
    parsed = *std::move(from_yaml);
  }
  if (type == PatchType::kJson ? !parsed.is_array() : !parsed.is_object()) {
    return absl::InvalidArgumentError(type == PatchType::kJson
                                          ? "a JSON patch must be a list of operations"
                                          : "the patch must be an object");
  }
  return parsed;
}

absl::StatusOr<json> ApplyPatch(PatchType type, const json& original, const json& patch) {
  switch (type) {
    case PatchType::kMerge: {
      json out = original;
      out.merge_patch(patch);
      return out;
    }
    case PatchType::kJson:
      try {
        return original.patch(patch);
      } catch (const json::exception& e) {
        return absl::InvalidArgumentError(StrCat("the JSON patch cannot be applied: ", e.what()));
      }
    case PatchType::kStrategic:
    case PatchType::kApply:
      return StrategicMerge(original, patch);
  }
  return absl::InternalError("unknown patch type");
}

}  // namespace canhazgpu::kubesim
