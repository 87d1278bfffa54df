#include "kubesim/dra_versions.h"

#include <map>
#include <regex>

#include "absl/strings/str_replace.h"
#include "core/strings.h"
#include "kubesim/openapi_documents.h"

namespace canhazgpu::kubesim {
namespace {

using nlohmann::json;

constexpr char kV1ApiVersion[] = "resource.k8s.io/v1";

// v1beta1 DeviceRequest → v1: every field but the name and firstAvailable
// goes into `exactly`.
void RequestToV1(json& request) {
  if (!request.is_object()) return;
  json exactly = json::object();
  for (auto it = request.begin(); it != request.end();) {
    if (it.key() == "name" || it.key() == "firstAvailable") {
      ++it;
    } else {
      exactly[it.key()] = *it;
      it = request.erase(it);
    }
  }
  if (!exactly.empty()) request["exactly"] = std::move(exactly);
}

void RequestFromV1(json& request) {
  if (!request.is_object() || !request.contains("exactly") || !request["exactly"].is_object())
    return;
  json exactly = std::move(request["exactly"]);
  request.erase("exactly");
  for (auto& [key, value] : exactly.items()) request[key] = value;
}

void DeviceToV1(json& device) {
  if (!device.is_object() || !device.contains("basic") || !device["basic"].is_object()) return;
  json basic = std::move(device["basic"]);
  device.erase("basic");
  for (auto& [key, value] : basic.items()) device[key] = value;
}

void DeviceFromV1(json& device) {
  if (!device.is_object()) return;
  json basic = json::object();
  for (auto it = device.begin(); it != device.end();) {
    if (it.key() == "name") {
      ++it;
    } else {
      basic[it.key()] = *it;
      it = device.erase(it);
    }
  }
  device["basic"] = std::move(basic);
}

// Applies `convert` to each element of the array at `pointer`, if any.
void EachAt(json& object, const json::json_pointer& pointer, void (*convert)(json&)) {
  if (!object.contains(pointer) || !object.at(pointer).is_array()) return;
  for (json& element : object.at(pointer)) convert(element);
}

// One object of resource.k8s.io, of `kind`: its v1beta1 shape changes.
void ReshapeV1beta1(json& object, const std::string& kind, bool to_v1) {
  if (kind == "ResourceClaim") {
    EachAt(object, "/spec/devices/requests"_json_pointer, to_v1 ? RequestToV1 : RequestFromV1);
  } else if (kind == "ResourceClaimTemplate") {
    EachAt(object, "/spec/spec/devices/requests"_json_pointer, to_v1 ? RequestToV1 : RequestFromV1);
  } else if (kind == "ResourceSlice") {
    EachAt(object, "/spec/devices"_json_pointer, to_v1 ? DeviceToV1 : DeviceFromV1);
  }
}

std::string KindOf(const json& object) {
  const json kind = object.value("kind", json());
  return kind.is_string() ? kind.get<std::string>() : "";
}

bool IsDraApiVersion(const json& object, const std::string& version) {
  return object.is_object() &&
         object.value("apiVersion", json()) == StrCat(kDraGroup, "/", version);
}

// One object or list at `from` as `to` (both versions of resource.k8s.io).
json Convert(json object, const std::string& from, const std::string& to) {
  if (!IsDraApiVersion(object, from)) return object;
  object["apiVersion"] = StrCat(kDraGroup, "/", to);
  const bool to_v1 = to == "v1";
  const bool reshape = (to_v1 ? from : to) == "v1beta1";
  std::string kind = KindOf(object);
  if (!kind.ends_with("List") || !object.contains("items") || !object["items"].is_array()) {
    if (reshape) ReshapeV1beta1(object, kind, to_v1);
    return object;
  }
  // A list: its kind names its items' (which may carry none).
  kind.resize(kind.size() - 4);
  for (json& item : object["items"]) {
    if (!item.is_object()) continue;
    if (item.contains("apiVersion")) item["apiVersion"] = object["apiVersion"];
    if (reshape) ReshapeV1beta1(item, kind, to_v1);
  }
  return object;
}

// v1 field paths as v1beta1 writes them: requests without `exactly.`,
// devices with `basic.`.
std::string PathsAsV1beta1(const std::string& text) {
  static const std::regex kExactly(R"((requests\[\d+\])\.exactly\.)");
  static const std::regex kDevice(R"((spec\.devices\[\d+\])\.(?!name\b))");
  return std::regex_replace(std::regex_replace(text, kExactly, "$1."), kDevice, "$1.basic.");
}

// Sets every x-kubernetes-group-version-kind of resource.k8s.io to `version`.
void RetagKinds(json& node, const std::string& version) {
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      // An array on schemas, one object on path operations.
      if (key == "x-kubernetes-group-version-kind" && value.is_array()) {
        for (json& gvk : value)
          if (gvk.value("group", json()) == kDraGroup) gvk["version"] = version;
      } else if (key == "x-kubernetes-group-version-kind" && value.is_object()) {
        if (value.value("group", json()) == kDraGroup) value["version"] = version;
      } else {
        RetagKinds(value, version);
      }
    }
  } else if (node.is_array()) {
    for (json& value : node) RetagKinds(value, version);
  }
}

std::string MakeOpenApiDocument(const std::string& version) {
  std::string_view v1;
  for (const OpenApiDocument& doc : OpenApiDocuments())
    if (doc.group_version_path == "apis/resource.k8s.io/v1") v1 = doc.json;
  const std::string prefix = StrCat("io.k8s.api.resource.", version, ".");
  const std::string path = StrCat("/apis/", kDraGroup, "/", version, "/");
  const std::string renamed = absl::StrReplaceAll(
      std::string(v1), {{"io.k8s.api.resource.v1.", prefix}, {"/apis/resource.k8s.io/v1/", path}});
  json doc = json::parse(renamed);
  RetagKinds(doc, version);
  if (version == "v1beta1") {
    json& schemas = doc["components"]["schemas"];
    // DeviceRequest: ExactDeviceRequest's fields inline.
    json& request = schemas[prefix + "DeviceRequest"];
    const json exact = schemas[prefix + "ExactDeviceRequest"]["properties"];
    request["properties"].erase("exactly");
    for (const auto& [key, value] : exact.items()) request["properties"][key] = value;
    // Device: the name, and everything else in `basic`.
    json& device = schemas[prefix + "Device"];
    json basic = device;
    basic["properties"].erase("name");
    basic.erase("required");
    basic.erase("x-kubernetes-group-version-kind");
    basic["description"] = "BasicDevice defines one device instance.";
    schemas[prefix + "BasicDevice"] = basic;
    device["properties"] = {
        {"name", device["properties"]["name"]},
        {"basic",
         {{"allOf", {{{"$ref", StrCat("#/components/schemas/", prefix, "BasicDevice")}}}},
          {"description", "Basic defines one device instance."}}}};
  }
  return doc.dump();
}

}  // namespace

const std::vector<std::string>& OlderDraVersions() {
  static const std::vector<std::string> kVersions = {"v1beta2", "v1beta1"};
  return kVersions;
}

bool IsOlderDraVersion(const std::string& group, const std::string& version) {
  return group == kDraGroup && (version == "v1beta1" || version == "v1beta2");
}

std::optional<std::string> OlderDraVersionOf(const std::vector<std::string>& parts) {
  if (parts.size() >= 3 && parts[0] == "apis" && IsOlderDraVersion(parts[1], parts[2]))
    return parts[2];
  return std::nullopt;
}

json DraToV1(const std::string& version, json object) {
  return Convert(std::move(object), version, "v1");
}

json DraFromV1(const std::string& version, json object) {
  if (!object.is_object()) return object;
  if (object.value("kind", json()) == "Table" && object.contains("rows") &&
      object["rows"].is_array()) {
    for (json& row : object["rows"]) {
      if (row.is_object() && row.contains("object"))
        row["object"] = Convert(std::move(row["object"]), "v1", version);
    }
    return object;
  }
  if (object.value("kind", json()) == "Status" && version == "v1beta1") {
    if (object.contains("message") && object["message"].is_string())
      object["message"] = PathsAsV1beta1(object["message"]);
    if (object.contains("/details/causes"_json_pointer)) {
      for (json& cause : object["details"]["causes"]) {
        for (const char* key : {"field", "message"})
          if (cause.contains(key) && cause[key].is_string())
            cause[key] = PathsAsV1beta1(cause[key]);
      }
    }
    return object;
  }
  return Convert(std::move(object), "v1", version);
}

const std::string& OlderDraOpenApiDocument(const std::string& version) {
  static const std::map<std::string, std::string>* documents = [] {
    auto* d = new std::map<std::string, std::string>;
    for (const std::string& v : OlderDraVersions()) (*d)[v] = MakeOpenApiDocument(v);
    return d;
  }();
  static const std::string kNone;
  auto it = documents->find(version);
  return it == documents->end() ? kNone : it->second;
}

}  // namespace canhazgpu::kubesim
