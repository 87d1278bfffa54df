#include "core/json_text.h"

#include <cstdio>

namespace canhazgpu {

std::string EscapeHiddenControlsInJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  while (!json.empty()) {
    char32_t c = 0;
    const size_t len = DecodeUtf8(json, &c);
    if (len == 0) {  // not from dump(): copied as it is
      out += json[0];
      json.remove_prefix(1);
      continue;
    }
    if (IsHiddenControl(c)) {
      // Structure is ASCII, so such a character is inside a string, where
      // its \u escape means the same character.
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      out.append(json.substr(0, len));
    }
    json.remove_prefix(len);
  }
  return out;
}

}  // namespace canhazgpu
