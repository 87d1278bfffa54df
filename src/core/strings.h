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

namespace canhazgpu {

namespace strings_internal {
inline void Append(std::string& out, std::string_view s) { out.append(s); }
inline void Append(std::string& out, char c) { out.push_back(c); }
// absl::Status::message() returns Abseil's own string_view.
inline void Append(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }
inline void Append(std::string& out, const std::string& s) { out.append(s); }
inline void Append(std::string& out, const char* s) { out.append(s); }
template <typename T>
requires(std::is_arithmetic_v<T> && !std::same_as<T, char> &&
         !std::same_as<T, bool>) void Append(std::string& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    out.append(std::to_string(v));
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, end);
  }
}
}  // namespace strings_internal

// Concatenates strings, characters and integers.
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

}  // namespace canhazgpu
