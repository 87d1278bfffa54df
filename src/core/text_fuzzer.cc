// libFuzzer target: how text from users is shown (issue 14). Any bytes must
// give valid UTF-8 that JSON can carry, a display form with no control
// character, and a JSON dump that parses back to the escaped text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/json_text.h"
#include "core/strings.h"

namespace {

using canhazgpu::DecodeUtf8;

// True when `text` is well-formed UTF-8, with none of the characters the
// display form escapes when `no_controls`.
bool WellFormed(std::string_view text, bool no_controls) {
  while (!text.empty()) {
    char32_t c = 0;
    size_t len = DecodeUtf8(text, &c);
    if (len == 0) return false;
    if (no_controls && (c < 0x20 || canhazgpu::IsHiddenControl(c))) return false;
    text.remove_prefix(len);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string valid = canhazgpu::EscapeInvalidUtf8(bytes);
  if (!WellFormed(valid, false) || canhazgpu::EscapeInvalidUtf8(valid) != valid) std::abort();
  if (WellFormed(bytes, false) && valid != bytes) std::abort();  // valid text is kept exact
  const std::string shown = canhazgpu::EscapeForDisplay(bytes);
  if (!WellFormed(shown, true) || canhazgpu::EscapeForDisplay(shown) != shown) std::abort();

  const std::string dumped = canhazgpu::DumpJson(nlohmann::json{{"note", std::string(bytes)}});
  if (!WellFormed(dumped, true)) std::abort();  // no raw control in the JSON text either
  nlohmann::json back = nlohmann::json::parse(dumped, nullptr, /*allow_exceptions=*/false);
  if (back.is_discarded() || back["note"] != valid) std::abort();

  const size_t max = size / 2;
  std::string_view prefix = canhazgpu::Utf8Prefix(bytes, max);
  if (prefix.size() > max || prefix.size() + 3 < std::min(max, size) ||
      bytes.substr(0, prefix.size()) != prefix) {
    std::abort();
  }
  return 0;
}
