// Small string helpers on std::string_view. Debian's Abseil is built with its
// own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), which does not
// mix with std::string_view, so the project uses these instead of
// absl/strings. Pure functions; thread-safe.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/strings.h"

namespace canhazgpu {

namespace strings_internal {
inline void Append(std::string& out, std::string_view s) { out.append(s); }
inline void Append(std::string& out, char c) { out.push_back(c); }
// absl::Status::message() returns Abseil's own string_view.
inline void Append(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }
inline void Append(std::string& out, const std::string& s) { out.append(s); }
inline void Append(std::string& out, const char* s) { out.append(s); }
void AppendDouble(std::string& out, double v);
template <typename T>
requires(std::is_arithmetic_v<T> && !std::same_as<T, char> &&
         !std::same_as<T, bool>) void Append(std::string& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    // Six significant digits, the shortest form ("1.5", "1e+06"), as
    // absl::StrCat and printf's %g write them.
    AppendDouble(out, static_cast<double>(v));
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, end);
  }
}
}  // namespace strings_internal

// Concatenates strings, characters and numbers: the project's one StrCat
// (absl::StrCat does not take std::string_view in Debian's Abseil).
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::Append(out, args), ...);
  return out;
}

std::vector<std::string_view> Split(std::string_view text, char sep, bool skip_empty = false);
std::string_view Trim(std::string_view text);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

// Parses the whole of `text` as a base-10 integer; false on any junk.
template <typename T>
bool ParseInt(std::string_view text, T* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

// Text from one user shown to others (notes, commands, selectors, process
// command lines, names) is bytes: it need not be UTF-8 and may hold control
// characters. docs/cli.md ("Text from other users") describes how it is shown;
// these functions are that rule, and every output applies one of them.

// Valid UTF-8: each byte that is not part of a well-formed UTF-8 sequence
// (stray continuation, truncated, overlong, surrogate, above U+10FFFF) becomes
// the four characters \xNN (lower-case hex); everything else is unchanged.
// For JSON, whose strings must be UTF-8.
std::string EscapeInvalidUtf8(std::string_view bytes);

// EscapeInvalidUtf8, and every character that moves the cursor, rewrites the
// screen or reorders text shown escaped, so the result is one line of plain
// text: \a \b \t \n \v \f \r \e, other C0 and DEL as \xNN, C1 and the Unicode
// bidi controls and line separators as \uNNNN. Backslashes are left as they
// are. For terminals, tables and the page.
std::string EscapeForDisplay(std::string_view bytes);

// The characters EscapeForDisplay writes as \uNNNN or \xNN besides C0: DEL,
// C1 (U+0080-U+009F), ALM, LRM, RLM, the line and paragraph separators and
// the bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069).
bool IsHiddenControl(char32_t c);

// The length of the well-formed UTF-8 sequence `text` starts with, with its
// code point in `*c`; 0 when it does not start with one (or is empty).
size_t DecodeUtf8(std::string_view text, char32_t* c);

// At most `max` bytes of `text`, cut before a UTF-8 sequence rather than in it.
std::string_view Utf8Prefix(std::string_view text, size_t max);

}  // namespace canhazgpu
