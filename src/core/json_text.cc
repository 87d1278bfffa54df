#include "core/json_text.h"

#include <cstdio>

namespace canhazgpu {

std::string EscapeHiddenControlsInJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  while (!json.empty()) {
    // ASCII but DEL, nearly all of it, is copied a run at a time.
    size_t run = 0;
    while (run < json.size() && static_cast<uint8_t>(json[run]) < 0x7F) ++run;
    if (run > 0) {
      out.append(json.substr(0, run));
      json.remove_prefix(run);
      continue;
    }
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
