// What a CustomResourceDefinition adds to the kinds served: one type per
// served version, with that version's schema (validation.h checks its
// custom resources against it).
#include "absl/strings/ascii.h"
#include "kube/json_object.h"
#include "kubesim/object_store.h"

namespace canhazgpu::kubesim {

using nlohmann::json;

void ObjectStore::RegisterCrdLocked(const json& crd) {
  const json spec = crd.value("spec", json::object());
  const json names = spec.value("names", json::object());
  ResourceType type{.group = kube::StringField(spec, "group"),
                    .resource = kube::StringField(names, "plural"),
                    .singular = kube::StringField(names, "singular"),
                    .kind = kube::StringField(names, "kind"),
                    .namespaced = kube::StringField(spec, "scope") != "Cluster"};
  if (names.contains("shortNames") && names["shortNames"].is_array()) {
    for (const json& s : names["shortNames"]) {
      if (s.is_string()) type.short_names.push_back(s.get<std::string>());
    }
  }
  if (type.group.empty() || type.resource.empty() || type.kind.empty()) return;
  if (type.singular.empty()) type.singular = absl::AsciiStrToLower(type.kind);
  for (const json& version : spec.value("versions", json::array())) {
    if (!version.is_object() || !version.value("served", true)) continue;
    ResourceType v = type;
    v.version = kube::StringField(version, "name");
    v.has_status = version.contains("/subresources/status"_json_pointer);
    json schema = version.value("/schema/openAPIV3Schema"_json_pointer, json());
    if (schema.is_object()) {
      // apiVersion, kind and metadata are the server's (ObjectMeta),
      // whatever the schema says of them: never checked or pruned here.
      for (const char* key : {"apiVersion", "kind", "metadata"}) {
        schema["properties"][key] = {{"x-kubernetes-preserve-unknown-fields", true}};
      }
      v.schema = std::make_shared<const json>(std::move(schema));
    }
    for (const json& field : version.value("selectableFields", json::array())) {
      std::string path = kube::StringField(field, "jsonPath");
      if (path.starts_with(".")) path.erase(0, 1);
      if (!path.empty()) v.selectable_fields.push_back(path);
    }
    if (!v.version.empty()) types_.Add(std::move(v));
  }
}

}  // namespace canhazgpu::kubesim
