// JSON output that holds text from users. nlohmann::json keeps strings as
// the bytes it was given and throws type_error 316 from dump() when one is
// not UTF-8, so one user's note in Latin-1 once aborted `status --json` for
// everyone (issue 14). Every JSON the CLI and the dashboard write goes
// through DumpJson. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu {

// Makes every string and object key of `value` valid UTF-8, each byte that
// is not shown as \xNN (EscapeInvalidUtf8). Valid text is left exact.
template <typename Json>
void MakeValidUtf8(Json& value) {
  if (value.is_string()) {
    auto& text = value.template get_ref<typename Json::string_t&>();
    text = EscapeInvalidUtf8(text);
  } else if (value.is_array()) {
    for (Json& item : value) MakeValidUtf8(item);
  } else if (value.is_object()) {
    bool keys_valid = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      MakeValidUtf8(it.value());
      keys_valid = keys_valid && EscapeInvalidUtf8(it.key()) == it.key();
    }
    if (keys_valid) return;
    Json fixed = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      fixed[EscapeInvalidUtf8(it.key())] = std::move(it.value());
    }
    value = std::move(fixed);
  }
}

// Serialized JSON with the characters IsHiddenControl names (DEL, C1, bidi
// controls, line separators) written as \uNNNN escapes: the same strings to
// a parser, but no raw control reaches a terminal that shows the JSON
// (nlohmann already escapes C0). `json` must be valid UTF-8, as dump() is.
std::string EscapeHiddenControlsInJson(std::string_view json);

// `value` serialized (dump(indent)) after MakeValidUtf8, with
// EscapeHiddenControlsInJson applied: never throws, never a raw control.
template <typename Json>
std::string DumpJson(Json value, int indent = -1) {
  MakeValidUtf8(value);
  return EscapeHiddenControlsInJson(value.dump(indent));
}

}  // namespace canhazgpu
