// The machinery behind JsonObject<T> (json_object.h). Include it only in the
// .cc file that defines a typed object. That file lists the object's fields
// once, and instantiates the base:
//
//   static constexpr auto Fields(Tag<ResourcePool>) {
//     return std::tuple{Member("name", &ResourcePool::name),
//                       Member("generation", &ResourcePool::generation)};
//   }
//   template struct JsonObject<ResourcePool>;
//
// FromJson, ToJson and IsEmpty all walk that one list, so reading and writing
// cannot disagree about a field. A field's C++ type says how it is read and
// written: std::string, std::optional of int64_t / bool / std::string,
// nlohmann::json (kept as is), another JsonObject, and std::vector or
// std::map<std::string, ...> of those.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "kube/json_object.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

// Selects a type's field list by argument-dependent lookup.
template <typename T>
struct Tag {};

// A modeled field: its JSON name and its member.
template <typename T, typename M>
struct FieldSpec {
  std::string_view key;
  M T::*member;
};

template <typename T, typename M>
constexpr FieldSpec<T, M> Member(std::string_view key, M T::*member) {
  return {key, member};
}

namespace json_internal {

using Json = nlohmann::json;

template <typename S>
concept Object = std::is_base_of_v<JsonObject<S>, S>;

// "spec" + "pool" -> "spec.pool"; "" + "spec" -> "spec".
std::string Join(std::string_view path, std::string_view key);
// "spec.devices" + 3 -> "spec.devices[3]".
std::string Index(std::string_view path, size_t index);
// "PATH: expected WHAT, got TYPE" (without "PATH: " at the root).
absl::Status TypeError(std::string_view path, std::string_view expected, const Json& got);

// What a JSON object of type S must look like, for TypeError. A struct may
// say more with a `kJsonShape` member.
template <Object S>
constexpr std::string_view ShapeOf() {
  if constexpr (requires { S::kJsonShape; }) {
    return S::kJsonShape;
  } else {
    return "an object";
  }
}

// nlohmann::json copies, compares and prints values recursively, so a value
// kept as is (in `unknown` or a field of type nlohmann::json) nested deeper
// than the stack allows would crash the program. Kubernetes objects are a
// few dozen levels deep; FromJson refuses values nested deeper than this.
inline constexpr int kMaxKeptDepth = 1000;

// InvalidArgument naming `path`.`key` when `in` holds containers nested more
// than kMaxKeptDepth deep. Does not recurse.
absl::Status CheckDepth(const Json& in, std::string_view path, std::string_view key = {});

// Reads a present, non-null JSON value into a field. Types are checked before
// every conversion, so nothing here throws. The overloads are declared before
// any is defined because the containers' ones call each other.
absl::Status Read(const Json& in, std::string_view path, std::string& out);
absl::Status Read(const Json& in, std::string_view path, int64_t& out);
absl::Status Read(const Json& in, std::string_view path, bool& out);
absl::Status Read(const Json& in, std::string_view path, Json& out);
template <Object S>
absl::Status Read(const Json& in, std::string_view path, S& out);
template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::optional<E>& out);
template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::vector<E>& out);
template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::map<std::string, E>& out);

// Whether a field is unset, and so left out when written. Plain integers and
// booleans have no overload on purpose: a field of those types could not
// tell 0 or false from absent, so model them as std::optional.
inline bool IsUnset(const std::string& value) { return value.empty(); }
inline bool IsUnset(const Json& value) { return value.is_null(); }
template <Object S>
bool IsUnset(const S& value) {
  return value.IsEmpty();
}
template <typename E>
bool IsUnset(const std::optional<E>& value) {
  return !value.has_value();
}
template <typename E>
bool IsUnset(const std::vector<E>& value) {
  return value.empty();
}
template <typename E>
bool IsUnset(const std::map<std::string, E>& value) {
  return value.empty();
}

// A field's value as JSON.
inline Json Encode(const std::string& value) { return value; }
inline Json Encode(int64_t value) { return value; }
inline Json Encode(bool value) { return value; }
inline Json Encode(const Json& value) { return value; }
template <Object S>
Json Encode(const S& value);
template <typename E>
Json Encode(const std::optional<E>& value);
template <typename E>
Json Encode(const std::vector<E>& value);
template <typename E>
Json Encode(const std::map<std::string, E>& value);

template <Object S>
absl::Status Read(const Json& in, std::string_view path, S& out) {
  ASSIGN_OR_RETURN(out, S::FromJson(in, path));
  return absl::OkStatus();
}

template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::optional<E>& out) {
  E value{};
  RETURN_IF_ERROR(Read(in, path, value));
  out = std::move(value);
  return absl::OkStatus();
}

template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::vector<E>& out) {
  if (!in.is_array()) {
    return TypeError(path, "a list", in);
  }
  out.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    RETURN_IF_ERROR(Read(in[i], Index(path, i), out[i]));
  }
  return absl::OkStatus();
}

template <typename E>
absl::Status Read(const Json& in, std::string_view path, std::map<std::string, E>& out) {
  if (!in.is_object()) {
    return TypeError(path, "an object", in);
  }
  for (const auto& [key, value] : in.items()) {
    RETURN_IF_ERROR(Read(value, Join(path, key), out[key]));
  }
  return absl::OkStatus();
}

template <Object S>
Json Encode(const S& value) {
  return value.ToJson();
}

template <typename E>
Json Encode(const std::optional<E>& value) {
  return Encode(*value);
}

template <typename E>
Json Encode(const std::vector<E>& value) {
  Json out = Json::array();
  for (const E& element : value) {
    out.push_back(Encode(element));
  }
  return out;
}

template <typename E>
Json Encode(const std::map<std::string, E>& value) {
  Json out = Json::object();
  for (const auto& [key, element] : value) {
    out[key] = Encode(element);
  }
  return out;
}

// Calls `fn` with each field of T's list.
template <typename T, typename Fn>
void ForEachField(Fn&& fn) {
  std::apply([&](const auto&... field) { (fn(field), ...); }, Fields(Tag<T>{}));
}

// Reads one member of the JSON object into `out`: into its field when T
// models `key`, else into `out.unknown`. A field left unset by its value
// (an explicit "", [], {} or null) keeps that value in `unknown` too, so it
// is written back as it was read.
template <typename T>
absl::Status ReadMember(const std::string& key, const Json& value, std::string_view path, T& out) {
  bool modeled = false;
  absl::Status status;
  ForEachField<T>([&](const auto& field) {
    if (modeled || field.key != key) {
      return;
    }
    modeled = true;
    auto& member = out.*field.member;
    if (!value.is_null()) {
      status = Read(value, Join(path, key), member);
    }
    if (status.ok() && IsUnset(member)) {
      out.unknown[key] = value;
    }
  });
  if (!modeled) {
    RETURN_IF_ERROR(CheckDepth(value, path, key));
    out.unknown[key] = value;
  }
  return status;
}

}  // namespace json_internal

template <typename T>
absl::StatusOr<T> JsonObject<T>::FromJson(const nlohmann::json& json, std::string_view path) {
  if (!json.is_object()) {
    return json_internal::TypeError(path, json_internal::ShapeOf<T>(), json);
  }
  T out;
  // Defaults such as apiVersion are for objects built in code; a read object
  // holds exactly what its JSON held.
  json_internal::ForEachField<T>([&](const auto& field) {
    using Member = std::remove_reference_t<decltype(out.*field.member)>;
    out.*field.member = Member{};
  });
  out.unknown = nlohmann::json::object();
  for (const auto& [key, value] : json.items()) {
    RETURN_IF_ERROR(json_internal::ReadMember(key, value, path, out));
  }
  return out;
}

template <typename T>
nlohmann::json JsonObject<T>::ToJson() const {
  nlohmann::json out = unknown.is_object() ? unknown : nlohmann::json::object();
  const T& self = static_cast<const T&>(*this);
  json_internal::ForEachField<T>([&](const auto& field) {
    const auto& member = self.*field.member;
    if (!json_internal::IsUnset(member)) {
      out[std::string(field.key)] = json_internal::Encode(member);
    }
  });
  return out;
}

template <typename T>
bool JsonObject<T>::IsEmpty() const {
  if (unknown.is_object() && !unknown.empty()) {
    return false;
  }
  const T& self = static_cast<const T&>(*this);
  bool empty = true;
  json_internal::ForEachField<T>(
      [&](const auto& field) { empty = empty && json_internal::IsUnset(self.*field.member); });
  return empty;
}

}  // namespace canhazgpu::kube
