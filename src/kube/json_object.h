// JsonObject<T>: the base of every typed Kubernetes object and of each part
// of one (objects_meta.h, objects_resource.h, objects_core.h). A typed struct
// models the fields our programs read and write; everything else the JSON
// held is kept in `unknown` and written back by ToJson(), so reading an object
// and writing it back never drops a field a newer API server or another
// controller set. FromJson(x).ToJson() == x for every x that FromJson accepts.
//
// The rules, per modeled field:
//   - absent or null in the JSON: the field is unset ("", empty, nullopt);
//   - unset when written: absent, unless the JSON read held it as an explicit
//     "", [], {} or null (kept in `unknown` and written back as read);
//   - set when written: the field's value, so a field the program cleared
//     disappears and one it set appears.
//
// Values are plain data: copy them freely; no locking (not thread-safe to
// mutate from two threads, like any struct).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// The string at `pointer` in an object read as plain JSON; "" when it is
// absent or not a string (code that reads a few fields of many objects).
inline std::string StringAt(const nlohmann::json& object,
                            const nlohmann::json::json_pointer& pointer) {
  if (!object.is_object() || !object.contains(pointer)) return "";
  const nlohmann::json& value = object.at(pointer);
  return value.is_string() ? value.get<std::string>() : std::string();
}

// The string member `key` of `object`; "" when it is absent or not a string.
inline std::string StringField(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The RFC 3339 time at `pointer` (creationTimestamp, a condition's
// lastTransitionTime, a container's finishedAt); nullopt when it is absent
// or not a time.
std::optional<TimePoint> TimeAt(const nlohmann::json& object,
                                const nlohmann::json::json_pointer& pointer);

template <typename T>
struct JsonObject {
  // The members of the JSON object this was read from that the struct does
  // not model, plus modeled ones whose explicit empty value ("", [], {},
  // null) the struct cannot tell from unset. Null for an object built in code.
  nlohmann::json unknown;

  // Decodes `json`, which must be a JSON object. Errors are one line naming
  // the path of the bad field ("spec.devices[3].name: expected a string, got
  // number"), prefixed with `path`, where `json` sits in a larger document.
  // Never throws.
  static absl::StatusOr<T> FromJson(const nlohmann::json& json, std::string_view path = {});

  // `unknown` with every set field written over it.
  nlohmann::json ToJson() const;

  // True when ToJson() would be {}: no field set and nothing unknown.
  bool IsEmpty() const;
};

}  // namespace canhazgpu::kube
