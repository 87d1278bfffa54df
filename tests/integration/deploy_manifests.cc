#include "integration/deploy_manifests.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/status_macros.h"
#include "core/strings.h"
#include "kubesim/patch.h"
#include "kubesim/resource_types.h"
#include "kubesim/validation.h"
#include "yaml/yaml_json.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(StrCat(path, ": cannot read"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const kubesim::ResourceTypes& BuiltInTypes() {
  static const auto* types = new kubesim::ResourceTypes(kubesim::ResourceTypes::BuiltIn());
  return *types;
}

const kubesim::ResourceType* TypeOf(const json& object) {
  return BuiltInTypes().FindKind(object.value("apiVersion", ""), object.value("kind", ""));
}

// Validate() lets a kind without a schema through unchanged; here that
// would hide a typo in apiVersion, so ask the document for the kind itself.
bool HasSchema(const kubesim::ResourceType& type) {
  const std::string path =
      type.group.empty() ? StrCat("api/", type.version) : StrCat("apis/", type.api_version());
  const json* document = kubesim::OpenApiDocumentFor(path);
  if (document == nullptr) return false;
  for (const auto& [name, schema] : (*document)["components"]["schemas"].items()) {
    for (const json& gvk : schema.value("x-kubernetes-group-version-kind", json::array())) {
      if (gvk.value("group", "") == type.group && gvk.value("version", "") == type.version &&
          gvk.value("kind", "") == type.kind) {
        return true;
      }
    }
  }
  return false;
}

void Structural(const json& node, const std::string& path, bool root,
                std::vector<std::string>& errors) {
  if (!node.is_object()) return errors.push_back(StrCat(path, ": not a schema object"));
  const bool open = node.value("x-kubernetes-int-or-string", false) ||
                    node.value("x-kubernetes-preserve-unknown-fields", false);
  const std::string type = node.value("type", "");
  if (type.empty() && !open) errors.push_back(StrCat(path, ": no type"));
  if (node.contains("properties") && node.contains("additionalProperties")) {
    errors.push_back(StrCat(path, ": both properties and additionalProperties"));
  }
  if (type == "array") {
    if (!node.contains("items")) return errors.push_back(StrCat(path, ": array without items"));
    Structural(node["items"], path + "[]", false, errors);
  }
  const json properties = node.value("properties", json::object());
  for (const auto& [key, child] : properties.items()) {
    // The API server allows nothing but a type on the root's metadata.
    if (root && key == "metadata" && child != json{{"type", "object"}}) {
      errors.push_back(StrCat(path, ".metadata: may only say type: object"));
    }
    Structural(child, StrCat(path, ".", key), false, errors);
  }
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    Structural(node["additionalProperties"], path + "[*]", false, errors);
  }
}

bool HasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  return true;
}

void Match(const json& schema, const json& value, const std::string& path,
           std::vector<std::string>& errors) {
  const std::string type = schema.value("type", "");
  if (!HasType(value, type)) return errors.push_back(StrCat(path, ": not a ", type));
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    errors.push_back(StrCat(path, ": ", value.dump(), " is not one of ", schema["enum"].dump()));
  }
  if (schema.contains("minimum") && value.is_number() && value < schema["minimum"]) {
    errors.push_back(StrCat(path, ": below ", schema["minimum"].dump()));
  }
  if (schema.value("format", "") == "date-time" && value.is_string()) {
    static const std::regex kRfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d))");
    if (!std::regex_match(value.get<std::string>(), kRfc3339)) {
      errors.push_back(StrCat(path, ": not an RFC 3339 date-time"));
    }
  }
  if (value.is_array()) {
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
      errors.push_back(StrCat(path, ": more than ", schema["maxItems"].dump(), " items"));
    }
    for (size_t i = 0; i < value.size(); ++i) {
      Match(schema["items"], value[i], StrCat(path, "[", i, "]"), errors);
    }
  }
  if (!value.is_object() || !schema.contains("properties")) return;
  for (const json& key : schema.value("required", json::array())) {
    if (!value.contains(key))
      errors.push_back(StrCat(path, ".", key.get<std::string>(), ": required"));
  }
  for (const auto& [key, child] : value.items()) {
    if (!schema["properties"].contains(key)) {
      errors.push_back(StrCat(path, ".", key, ": unknown field"));
    } else {
      Match(schema["properties"][key], child, StrCat(path, ".", key), errors);
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<json>> LoadKustomizationResources(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, ReadText(dir + "/kustomization.yaml"));
  ASSIGN_OR_RETURN(json kustomization, yaml::ToJson(text));
  std::vector<json> objects;
  for (const json& file : kustomization.value("resources", json::array())) {
    ASSIGN_OR_RETURN(std::string body, ReadText(StrCat(dir, "/", file.get<std::string>())));
    auto documents = yaml::DocumentsToJson(body);
    if (!documents.ok()) {
      return absl::InvalidArgumentError(
          StrCat(file.get<std::string>(), ": ", documents.status().message()));
    }
    objects.insert(objects.end(), documents->begin(), documents->end());
  }
  return objects;
}

std::string Describe(const json& object) {
  return StrCat(object.value("kind", "?"), " ",
                object.value("/metadata/name"_json_pointer, std::string("?")));
}

std::vector<std::string> StrictValidationErrors(const json& object) {
  const kubesim::ResourceType* type = TypeOf(object);
  if (type == nullptr) return {StrCat(Describe(object), ": a kind the API server does not serve")};
  if (!HasSchema(*type)) return {StrCat(Describe(object), ": no OpenAPI schema for its kind")};
  json copy = object;
  kubesim::Validation v = kubesim::Validate(*type, copy);
  std::vector<std::string> errors;
  if (v.decode_error) errors.push_back(StrCat(Describe(object), ": ", *v.decode_error));
  for (const kube::StatusCause& c : v.causes) {
    errors.push_back(StrCat(Describe(object), ": ", c.field, ": ", c.message));
  }
  for (const std::string& field : v.unknown_fields) {
    errors.push_back(StrCat(Describe(object), ": unknown field \"", field, "\""));
  }
  return errors;
}

bool IsNamespaced(const json& object) {
  const kubesim::ResourceType* type = TypeOf(object);
  return type != nullptr && type->namespaced;
}

std::vector<std::string> StructuralErrors(const json& schema) {
  std::vector<std::string> errors;
  Structural(schema, "openAPIV3Schema", true, errors);
  return errors;
}

json SchemaAt(const json& schema, const std::string& json_path) {
  const json* node = &schema;
  std::istringstream parts(json_path.starts_with(".") ? json_path.substr(1) : json_path);
  for (std::string part; std::getline(parts, part, '.');) {
    if (!node->contains("properties") || !(*node)["properties"].contains(part)) return nullptr;
    node = &(*node)["properties"][part];
  }
  return *node;
}

std::vector<std::string> SchemaErrors(const json& schema, const json& value) {
  std::vector<std::string> errors;
  Match(schema, value, "", errors);
  return errors;
}

}  // namespace canhazgpu::testing
