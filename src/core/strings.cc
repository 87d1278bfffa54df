#include "core/strings.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace canhazgpu {

namespace strings_internal {
void AppendDouble(std::string& out, double v) { out.append(absl::StrCat(v)); }
}  // namespace strings_internal

std::vector<std::string_view> Split(std::string_view text, char sep, bool skip_empty) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    std::string_view part =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!part.empty() || !skip_empty) parts.push_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string_view Trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(kSpace);
  return text.substr(begin, end - begin + 1);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(sep);
    out.append(parts[i]);
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Per the Unicode standard's table of well-formed sequences (3-7), as JSON
// parsers check: no overlong forms, surrogates or code points past U+10FFFF.
size_t DecodeUtf8(std::string_view s, char32_t* out) {
  if (s.empty()) return 0;
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) {
    *out = b0;
    return 1;
  }
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < len || byte(1) < lo || byte(1) > hi) return 0;
  char32_t c = b0 & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(i) & 0x3F);
  }
  *out = c;
  return len;
}

namespace {

void AppendHex(std::string& out, const char* prefix, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xF];
}

// The one escaping routine behind both public functions.
std::string Escape(std::string_view bytes, bool controls) {
  std::string out;
  out.reserve(bytes.size());
  // ASCII that needs no escape, nearly all text, is copied a run at a time.
  auto plain = [controls](char ch) {
    const auto b = static_cast<uint8_t>(ch);
    return b < 0x80 && (!controls || (b >= 0x20 && b != 0x7F));
  };
  while (!bytes.empty()) {
    size_t run = 0;
    while (run < bytes.size() && plain(bytes[run])) ++run;
    if (run > 0) {
      out.append(bytes.substr(0, run));
      bytes.remove_prefix(run);
      continue;
    }
    char32_t c = 0;
    const size_t len = DecodeUtf8(bytes, &c);
    if (len == 0) {
      AppendHex(out, "\\x", static_cast<uint8_t>(bytes[0]), 2);
      bytes.remove_prefix(1);
      continue;
    }
    if (controls && (c < 0x20 || IsHiddenControl(c))) {
      static constexpr std::string_view kNamed = "abtnvfr";  // 0x07 to 0x0D
      if (c >= 0x07 && c <= 0x0D) {
        out += '\\';
        out += kNamed[c - 0x07];
      } else if (c == 0x1B) {
        out += "\\e";
      } else if (c < 0x80) {
        AppendHex(out, "\\x", c, 2);
      } else {
        AppendHex(out, "\\u", c, 4);
      }
    } else {
      out.append(bytes.substr(0, len));
    }
    bytes.remove_prefix(len);
  }
  return out;
}

}  // namespace

bool IsHiddenControl(char32_t c) {
  return c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F ||
         (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

std::string EscapeInvalidUtf8(std::string_view bytes) { return Escape(bytes, false); }

std::string EscapeForDisplay(std::string_view bytes) { return Escape(bytes, true); }

std::string_view Utf8Prefix(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  // The start of the sequence byte `max` belongs to, at most three
  // continuation bytes back; cut there if that sequence is well-formed.
  size_t start = max;
  while (start > 0 && max - start < 3 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  char32_t c = 0;
  const size_t len = DecodeUtf8(text.substr(start), &c);
  return text.substr(0, len > 0 && start + len > max ? start : max);
}

}  // namespace canhazgpu
