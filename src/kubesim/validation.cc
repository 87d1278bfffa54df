#include "kubesim/validation.h"

#include <map>
#include <regex>
#include <set>

#include "core/strings.h"
#include "kubesim/openapi_documents.h"

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
  SchemaWalker(const json& document, Validation& out)
      : schemas_(document["components"]["schemas"]), out_(out) {}

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
    if (!out_.decode_error) {
      out_.decode_error = StrCat("json: cannot unmarshal ", TypeName(value), " into field ",
                                 path.empty() ? "(root)" : path, " of type ", want);
    }
  }
  void Cause(const std::string& reason, const std::string& field, const std::string& message) {
    out_.causes.push_back({reason, message, field});
  }

  const json& schemas_;
  Validation& out_;
};

// ---- resource.k8s.io/v1 rules ----

const std::regex& DnsLabel() {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return re;
}
const std::regex& DnsSubdomain() {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return re;
}
const std::regex& CIdentifier() {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*");
  return re;
}

class DraRules {
 public:
  explicit DraRules(Validation& out) : out_(out) {}

  void Invalid(const std::string& field, const json& value, const std::string& why) {
    out_.causes.push_back(
        {"FieldValueInvalid", StrCat("Invalid value: ", value.dump(), ": ", why), field});
  }
  void Required(const std::string& field) {
    out_.causes.push_back({"FieldValueRequired", "Required value", field});
  }
  void TooMany(const std::string& field, size_t n, size_t max, const std::string& what = "items") {
    out_.causes.push_back({"FieldValueTooMany",
                           StrCat("Too many: ", n, ": must have at most ", max, " ", what), field});
  }
  void TooLong(const std::string& field, size_t max) {
    out_.causes.push_back(
        {"FieldValueTooLong", StrCat("Too long: may not be more than ", max, " bytes"), field});
  }

  void Label(const std::string& field, const json& v) {
    if (!v.is_string() || v.get<std::string>().empty()) return Required(field);
    const std::string s = v;
    if (s.size() > 63 || !std::regex_match(s, DnsLabel())) {
      Invalid(field, v,
              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character");
    }
  }
  void Subdomain(const std::string& field, const json& v, size_t max) {
    if (!v.is_string() || v.get<std::string>().empty()) return Required(field);
    const std::string s = v;
    if (s.size() > max) return TooLong(field, max);
    if (!std::regex_match(s, DnsSubdomain())) {
      Invalid(field, v,
              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
              "'-' or '.', and must start and end with an alphanumeric character");
    }
  }
  void QualifiedName(const std::string& field, const std::string& key) {
    const size_t slash = key.find('/');
    const std::string id = slash == std::string::npos ? key : key.substr(slash + 1);
    const std::string domain = slash == std::string::npos ? "" : key.substr(0, slash);
    if (id.size() > 32 || !std::regex_match(id, CIdentifier()) ||
        (slash != std::string::npos &&
         (domain.size() > 63 || !std::regex_match(domain, DnsSubdomain())))) {
      Invalid(field, key,
              "must be a C identifier of at most 32 characters, optionally prefixed by a DNS "
              "subdomain of at most 63 characters and '/'");
    }
  }
  void Selectors(const std::string& field, const json& selectors) {
    if (!selectors.is_array()) return;
    if (selectors.size() > 32) TooMany(field, selectors.size(), 32);
    for (size_t i = 0; i < selectors.size(); ++i) {
      const json expr = selectors[i].value("/cel/expression"_json_pointer, json());
      const std::string at = StrCat(field, "[", i, "].cel.expression");
      if (!expr.is_string() || expr.get<std::string>().empty()) {
        Required(at);
      } else if (expr.get<std::string>().size() > 10 * 1024) {
        TooLong(at, 10 * 1024);
      }
    }
  }

  void Slice(const json& spec) {
    Subdomain("spec.driver", spec.value("driver", json()), 63);
    const json pool = spec.value("pool", json::object());
    if (pool.is_object()) {
      if (!pool.contains("name"))
        Required("spec.pool.name");
      else if (pool["name"].is_string() && pool["name"].get<std::string>().size() > 253)
        TooLong("spec.pool.name", 253);
      if (pool.value("resourceSliceCount", 0) <= 0)
        Invalid("spec.pool.resourceSliceCount", pool.value("resourceSliceCount", json(0)),
                "must be greater than zero");
      if (pool.value("generation", 0) < 0)
        Invalid("spec.pool.generation", pool["generation"], "must be greater than or equal to 0");
    }
    int selections = 0;
    selections += spec.value("nodeName", "").empty() ? 0 : 1;
    selections += spec.contains("nodeSelector") && !spec["nodeSelector"].is_null() ? 1 : 0;
    selections += spec.value("allNodes", false) ? 1 : 0;
    selections += spec.value("perDeviceNodeSelection", false) ? 1 : 0;
    if (selections != 1) {
      out_.causes.push_back({"FieldValueRequired",
                             selections == 0
                                 ? "Required value: exactly one of `nodeName`, `nodeSelector`, "
                                   "`allNodes`, `perDeviceNodeSelection` is required"
                                 : "Invalid value: {\"`nodeName`, `nodeSelector`, `allNodes`, "
                                   "`perDeviceNodeSelection`\"}: exactly one field must be set",
                             "spec"});
    }
    const json devices = spec.value("devices", json::array());
    if (!devices.is_array()) return;
    if (devices.size() > 128) TooMany("spec.devices", devices.size(), 128);
    std::set<std::string> names;
    for (size_t i = 0; i < devices.size(); ++i) {
      const json& d = devices[i];
      const std::string at = StrCat("spec.devices[", i, "]");
      Label(at + ".name", d.value("name", json()));
      if (d.contains("name") && d["name"].is_string() &&
          !names.insert(d["name"].get<std::string>()).second) {
        out_.causes.push_back(
            {"FieldValueDuplicate", StrCat("Duplicate value: ", d["name"].dump()), at + ".name"});
      }
      const json attributes = d.value("attributes", json::object());
      const json capacity = d.value("capacity", json::object());
      const size_t n = (attributes.is_object() ? attributes.size() : 0) +
                       (capacity.is_object() ? capacity.size() : 0);
      if (n > 32) TooMany(at, n, 32, "attributes and capacities combined");
      if (attributes.is_object()) {
        for (const auto& [key, value] : attributes.items()) {
          const std::string attr = StrCat(at, ".attributes[", key, "]");
          QualifiedName(attr, key);
          int set = 0;
          for (const char* f : {"int", "bool", "string", "version"})
            set += value.contains(f) ? 1 : 0;
          if (set != 1) Invalid(attr, value, "exactly one value must be specified");
          for (const char* f : {"string", "version"}) {
            if (value.contains(f) && value[f].is_string() &&
                value[f].get<std::string>().size() > 64) {
              TooLong(StrCat(attr, ".", f), 64);
            }
          }
        }
      }
      if (capacity.is_object()) {
        for (const auto& [key, value] : capacity.items()) {
          QualifiedName(StrCat(at, ".capacity[", key, "]"), key);
          if (!value.contains("value")) Required(StrCat(at, ".capacity[", key, "].value"));
        }
      }
    }
  }

  void ClaimSpec(const std::string& base, const json& spec) {
    const json requests = spec.value("/devices/requests"_json_pointer, json::array());
    if (!requests.is_array()) return;
    const std::string field = base + ".devices.requests";
    if (requests.size() > 32) TooMany(field, requests.size(), 32);
    std::set<std::string> names;
    for (size_t i = 0; i < requests.size(); ++i) {
      const json& r = requests[i];
      const std::string at = StrCat(field, "[", i, "]");
      Label(at + ".name", r.value("name", json()));
      if (r.contains("name") && r["name"].is_string() &&
          !names.insert(r["name"].get<std::string>()).second) {
        out_.causes.push_back(
            {"FieldValueDuplicate", StrCat("Duplicate value: ", r["name"].dump()), at + ".name"});
      }
      const bool exactly = r.contains("exactly") && r["exactly"].is_object();
      const bool first = r.contains("firstAvailable") && r["firstAvailable"].is_array() &&
                         !r["firstAvailable"].empty();
      if (exactly == first) {
        Invalid(at, json("{`exactly`, `firstAvailable`}"),
                "exactly one of `exactly` or `firstAvailable` is required");
        continue;
      }
      auto exact = [&](const json& e, const std::string& where) {
        Subdomain(where + ".deviceClassName", e.value("deviceClassName", json()), 253);
        const std::string mode = e.value("allocationMode", "ExactCount");
        if (mode != "ExactCount" && mode != "All") {
          out_.causes.push_back({"FieldValueNotSupported",
                                 StrCat("Unsupported value: \"", mode,
                                        "\": supported values: \"All\", \"ExactCount\""),
                                 where + ".allocationMode"});
        }
        if (mode == "ExactCount" && e.contains("count") && e["count"].is_number_integer() &&
            e["count"].get<int64_t>() <= 0) {
          Invalid(where + ".count", e["count"], "must be greater than zero");
        }
        Selectors(where + ".selectors", e.value("selectors", json::array()));
      };
      if (exactly) {
        exact(r["exactly"], at + ".exactly");
      } else {
        if (r["firstAvailable"].size() > 8)
          TooMany(at + ".firstAvailable", r["firstAvailable"].size(), 8);
        for (size_t j = 0; j < r["firstAvailable"].size(); ++j) {
          const std::string sub = StrCat(at, ".firstAvailable[", j, "]");
          Label(sub + ".name", r["firstAvailable"][j].value("name", json()));
          exact(r["firstAvailable"][j], sub);
        }
      }
    }
    for (const char* list : {"constraints", "config"}) {
      const json items = spec.value("devices", json::object()).value(list, json::array());
      if (items.is_array() && items.size() > 32)
        TooMany(StrCat(base, ".devices.", list), items.size(), 32);
    }
  }

 private:
  Validation& out_;
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
  const Schemas& schemas = AllSchemas();
  auto doc = schemas.documents.find(path);
  auto name =
      schemas.kind_index.find(StrCat(type.group, "/", type.version, "/", type.kind, "@", path));
  if (doc == schemas.documents.end() || name == schemas.kind_index.end()) return out;
  SchemaWalker(doc->second, out)
      .Walk(doc->second["components"]["schemas"][name->second], object, "");
  if (out.decode_error || type.group != "resource.k8s.io") return out;
  DraRules rules(out);
  const json spec = object.value("spec", json::object());
  if (!spec.is_object()) return out;
  if (type.kind == "ResourceSlice") {
    rules.Slice(spec);
    if (old != nullptr) {
      for (const char* field : {"driver", "nodeName"}) {
        const json before = old->value("spec", json::object()).value(field, json());
        if (spec.value(field, json()) != before)
          rules.Invalid(StrCat("spec.", field), spec.value(field, json()), "field is immutable");
      }
    }
  } else if (type.kind == "ResourceClaim") {
    rules.ClaimSpec("spec", spec);
    if (old != nullptr && old->value("spec", json::object()) != spec) {
      rules.Invalid("spec", spec, "field is immutable");
    }
  } else if (type.kind == "ResourceClaimTemplate") {
    rules.ClaimSpec("spec.spec", spec.value("spec", json::object()));
  } else if (type.kind == "DeviceClass") {
    rules.Selectors("spec.selectors", spec.value("selectors", json::array()));
  }
  return out;
}

}  // namespace canhazgpu::kubesim
