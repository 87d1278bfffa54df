// toml++ 3.3.0 asks of each character outside a string whether it is
// whitespace, and for most code points from U+00A1 to U+0499, U+2D8E to
// U+3187 and U+FBE6 to U+FEFE that question reaches __builtin_unreachable():
// undefined behaviour on any text with, say, an `é` where toml++ expects a
// token (found by config_fuzzer, three times, behind ever finer guesses at
// where toml++ reads a token). Rather than guess again, the parser never sees
// those code points: every code point from U+00A0 to U+FEFF moves to plane 15
// (private use) before parsing, where that function answers "no" at its first
// comparison, and back in what the parse returns. TOML's whitespace is only
// space and tab, so no valid file changes meaning.
// Internal to canhazgpu::config; pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace canhazgpu::config {

// `text` with the code points U+00A0-U+FEFF moved to U+F0000-U+FFE5F. An
// error, naming `path` and the line, when `text` is not UTF-8 (TOML must be)
// or already holds a plane-15 character, which could not be told apart.
absl::StatusOr<std::string> ShieldTomlText(const std::string& path, std::string_view text);

// Moves them back; other text is returned unchanged.
std::string UnshieldTomlText(std::string_view text);

}  // namespace canhazgpu::config
