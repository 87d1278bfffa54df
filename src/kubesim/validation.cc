#include "kubesim/validation.h"

#include <map>

#include "core/strings.h"
#include "kube/resource_rules.h"
#include "kubesim/capacity_rules.h"
#include "kubesim/cel_selectors.h"
#include "kubesim/claim_status_rules.h"
#include "kubesim/openapi_documents.h"
#include "kubesim/pod_rules.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

// The parsed documents and, per group/version/kind, its schema's name.
struct Schemas {
  std::map<std::string, json> documents;          // group-version path -> document
  std::map<std::string, std::string> kind_index;  // "group/version/Kind" -> schema name
};

const Schemas& AllSchemas() {
  static const Schemas* schemas = [] {
    auto* s = new Schemas;
    for (const OpenApiDocument& doc : OpenApiDocuments()) {
      json parsed = json::parse(doc.json);
      const std::string path(doc.group_version_path);
      for (const auto& [name, schema] : parsed["components"]["schemas"].items()) {
        for (const json& gvk : schema.value("x-kubernetes-group-version-kind", json::array())) {
          s->kind_index[StrCat(gvk.value("group", ""), "/", gvk.value("version", ""), "/",
                               gvk.value("kind", ""), "@", path)] = name;
        }
      }
      s->documents.emplace(path, std::move(parsed));
    }
    return s;
  }();
  return *schemas;
}

std::string TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int64";
    case json::value_t::number_float:
      return "float64";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "null";
  }
}

class SchemaWalker {
 public:
  // `schemas`: what `$ref`s name (an OpenAPI document's components.schemas;
  // empty for a CRD's schema, which has none). `custom`: a custom resource,
  // whose wrong types are 422 causes instead of a decode error.
  SchemaWalker(const json& schemas, Validation& out, bool custom)
      : schemas_(schemas), out_(out), custom_(custom) {}

  void Walk(const json& schema_in, json& value, const std::string& path) {
    if (value.is_null()) return;  // unset
    const json& schema = Resolve(schema_in);
    if (schema.value("x-kubernetes-int-or-string", false)) {
      if (!value.is_string() && !value.is_number_integer()) TypeError(path, "int or string", value);
      return;
    }
    if (schema.contains("oneOf") || schema.contains("anyOf")) return;
    const std::string type = schema.value("type", "");
    if (type == "string") {
      if (!value.is_string()) return TypeError(path, "string", value);
      if (schema.contains("enum") && !schema["enum"].empty()) {
        const auto& values = schema["enum"];
        if (std::find(values.begin(), values.end(), value) == values.end()) {
          std::string supported;
          for (const json& v : values) supported += StrCat(supported.empty() ? "" : ", ", v.dump());
          Cause("FieldValueNotSupported", path,
                StrCat("Unsupported value: ", value.dump(), ": supported values: ", supported));
        }
      }
    } else if (type == "integer") {
      if (!value.is_number_integer()) return TypeError(path, "int64", value);
    } else if (type == "number") {
      if (!value.is_number()) return TypeError(path, "float64", value);
    } else if (type == "boolean") {
      if (!value.is_boolean()) return TypeError(path, "bool", value);
    } else if (type == "array") {
      if (!value.is_array()) return TypeError(path, "array", value);
      if (schema.contains("items")) {
        for (size_t i = 0; i < value.size(); ++i) {
          Walk(schema["items"], value[i], StrCat(path, "[", i, "]"));
        }
      }
    } else if (type == "object" || schema.contains("properties")) {
      if (!value.is_object()) return TypeError(path, "object", value);
      if (schema.contains("properties")) {
        const json& properties = schema["properties"];
        std::vector<std::string> unknown;
        for (auto& [key, child] : value.items()) {
          const std::string child_path = path.empty() ? key : StrCat(path, ".", key);
          if (properties.contains(key)) {
            Walk(properties[key], child, child_path);
          } else if (!schema.value("x-kubernetes-preserve-unknown-fields", false)) {
            unknown.push_back(key);
            out_.unknown_fields.push_back(child_path);
          }
        }
        for (const std::string& key : unknown) value.erase(key);
        for (const json& required : schema.value("required", json::array())) {
          const std::string key = required.get<std::string>();
          if (!value.contains(key) || value[key].is_null()) {
            Cause("FieldValueRequired", path.empty() ? key : StrCat(path, ".", key),
                  "Required value");
          }
        }
      } else if (schema.contains("additionalProperties") &&
                 schema["additionalProperties"].is_object()) {
        for (auto& [key, child] : value.items()) {
          Walk(schema["additionalProperties"], child, StrCat(path, "[", key, "]"));
        }
      }
    }
  }

 private:
  // The schema a `$ref` or a one-element `allOf` (how the documents wrap a
  // reference to add a description or default) stands for; other keys of
  // the wrapper do not constrain the value. No copies: every write walks
  // these documents.
  const json& Resolve(const json& schema) const {
    static const json kAnything = json::object();
    const json* s = &schema;
    for (int depth = 0; depth < 32; ++depth) {
      if (auto ref = s->find("$ref"); ref != s->end() && ref->is_string()) {
        const std::string text = *ref;
        auto target = schemas_.find(text.substr(text.rfind('/') + 1));
        s = target != schemas_.end() ? &*target : &kAnything;
      } else if (auto all = s->find("allOf");
                 all != s->end() && all->is_array() && all->size() == 1) {
        s = &(*all)[0];
      } else {
        break;
      }
    }
    return *s;
  }

  void TypeError(const std::string& path, const std::string& want, const json& value) {
    if (custom_) {
      const std::string got = CustomTypeName(TypeName(value));
      const std::string field = path.empty() ? "body" : path;
      Cause("FieldValueTypeInvalid", field,
            StrCat("Invalid value: \"", got, "\": ", field, " in body must be of type ",
                   CustomTypeName(want), ": \"", got, "\""));
      return;
    }
    if (!out_.decode_error) {
      out_.decode_error = StrCat("json: cannot unmarshal ", TypeName(value), " into field ",
                                 path.empty() ? "(root)" : path, " of type ", want);
    }
  }
  void Cause(const std::string& reason, const std::string& field, const std::string& message) {
    out_.causes.push_back({reason, message, field});
  }

  // A Go type name (TypeName's, TypeError's), as JSON Schema names it.
  static std::string CustomTypeName(const std::string& go) {
    if (go == "int64") return "integer";
    if (go == "float64") return "number";
    if (go == "bool") return "boolean";
    return go;
  }

  const json& schemas_;
  Validation& out_;
  const bool custom_;
};

}  // namespace

const json* OpenApiDocumentFor(const std::string& group_version_path) {
  const Schemas& s = AllSchemas();
  auto it = s.documents.find(group_version_path);
  return it == s.documents.end() ? nullptr : &it->second;
}

Validation Validate(const ResourceType& type, json& object, const json* old) {
  Validation out;
  const std::string path = type.group.empty() ? StrCat("api/", type.version)
                                              : StrCat("apis/", type.group, "/", type.version);
  if (type.schema) {
    static const json kNoReferences = json::object();
    SchemaWalker(kNoReferences, out, /*custom=*/true).Walk(*type.schema, object, "");
    return out;
  }
  const Schemas& schemas = AllSchemas();
  auto doc = schemas.documents.find(path);
  auto name =
      schemas.kind_index.find(StrCat(type.group, "/", type.version, "/", type.kind, "@", path));
  if (doc == schemas.documents.end() || name == schemas.kind_index.end()) {
    out.no_schema =
        StrCat("the simulated API server has no schema for ", type.kind, " (", type.api_version(),
               ") and does not store objects it cannot check: add its OpenAPI "
               "document to src/kubesim/openapi/");
    return out;
  }
  const json& components = doc->second["components"]["schemas"];
  SchemaWalker(components, out, /*custom=*/false).Walk(components[name->second], object, "");
  if (!out.decode_error && type.resource == "customresourcedefinitions") {
    // apiextensions.k8s.io/v1: every version has a structural schema, which
    // its custom resources are then checked against.
    const json versions = object.value("/spec/versions"_json_pointer, json::array());
    for (size_t i = 0; versions.is_array() && i < versions.size(); ++i) {
      if (!versions[i].value("/schema/openAPIV3Schema"_json_pointer, json()).is_object()) {
        out.causes.push_back({"FieldValueRequired", "Required value: schemas are required",
                              StrCat("spec.versions[", i, "].schema.openAPIV3Schema")});
      }
    }
  }
  if (!out.decode_error && type.group.empty() && type.kind == "Pod") {
    std::vector<kube::StatusCause> gates = CheckSchedulingGates(object, old);
    out.causes.insert(out.causes.end(), gates.begin(), gates.end());
  }
  if (out.decode_error || type.group != "resource.k8s.io") return out;
  const json spec = object.value("spec", json::object());
  if (!spec.is_object()) return out;
  auto add = [&](std::vector<kube::StatusCause> causes) {
    out.causes.insert(out.causes.end(), causes.begin(), causes.end());
  };
  if (type.kind == "ResourceSlice") {
    add(kube::CheckResourceSliceSpec(spec));
    add(CheckSliceCapacity(spec));
    if (old != nullptr) {
      for (const char* field : {"driver", "nodeName"}) {
        const json before = old->value("spec", json::object()).value(field, json());
        if (spec.value(field, json()) != before) {
          out.causes.push_back(
              kube::ImmutableField(StrCat("spec.", field), spec.value(field, json())));
        }
      }
    }
  } else if (type.kind == "ResourceClaim") {
    add(kube::CheckDeviceClaimSpec("spec", spec));
    add(CheckCapacityRequests("spec", spec));
    const json status = object.value("status", json::object());
    if (status.is_object()) {
      add(CheckClaimShares(status));
      add(CheckDeviceStatuses(status));
    }
    if (old != nullptr && old->value("spec", json::object()) != spec) {
      out.causes.push_back(kube::ImmutableField("spec", spec));
    }
  } else if (type.kind == "ResourceClaimTemplate") {
    add(kube::CheckDeviceClaimSpec("spec.spec", spec.value("spec", json::object())));
    add(CheckCapacityRequests("spec.spec", spec.value("spec", json::object())));
  } else if (type.kind == "DeviceClass") {
    add(kube::CheckSelectors("spec.selectors", spec.value("selectors", json::array())));
  }
  add(CheckCelSelectors(type, object, old));
  return out;
}

}  // namespace canhazgpu::kubesim
