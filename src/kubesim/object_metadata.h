// Reading and writing an object's metadata as the simulated API server
// stores it (nlohmann::json), for the object store's files
// (object_store.cc, object_store_delete.cc). Tolerant of missing or
// mistyped fields: stored objects passed validation, but the checks run
// before some of it. Pure; thread-compatible.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::kubesim::object_metadata {

// object[key] when it is a string; "" otherwise.
inline std::string Text(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The object's metadata, made an object first when it is not one.
inline nlohmann::json& Meta(nlohmann::json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = nlohmann::json::object();
  }
  return object["metadata"];
}

// The object's metadata, or an empty object.
inline const nlohmann::json& MetaOf(const nlohmann::json& object) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

// Whether finalizers still hold the object.
inline bool HasFinalizers(const nlohmann::json& object) {
  const nlohmann::json& meta = MetaOf(object);
  auto it = meta.find("finalizers");
  return it != meta.end() && it->is_array() && !it->empty();
}

}  // namespace canhazgpu::kubesim::object_metadata
