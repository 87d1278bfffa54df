#include "config/toml_shield.h"

#include "absl/status/status.h"
#include "core/strings.h"

namespace canhazgpu::config {
namespace {

constexpr char32_t kFirstMoved = 0xA0;
constexpr char32_t kLastMoved = 0xFEFF;
constexpr char32_t kPlane15 = 0xF0000;
constexpr char32_t kPlane16 = 0x100000;

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

absl::Status ErrorOnLine(const std::string& path, int line, std::string_view message) {
  return absl::InvalidArgumentError(StrCat(path, ":", line, ": ", message));
}

}  // namespace

absl::StatusOr<std::string> ShieldTomlText(const std::string& path, std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  int line = 1;
  while (!text.empty()) {
    char32_t c = 0;
    const size_t len = DecodeUtf8(text, &c);
    if (len == 0) return ErrorOnLine(path, line, "not valid UTF-8");
    if (c == '\n') ++line;
    if (c >= kFirstMoved && c <= kLastMoved) {
      AppendUtf8(kPlane15 + (c - kFirstMoved), out);
    } else if (c >= kPlane15 && c < kPlane16) {
      return ErrorOnLine(path, line, "a private-use character of plane 15 (U+F0000-U+FFFFF)");
    } else {
      out.append(text.substr(0, len));
    }
    text.remove_prefix(len);
  }
  return out;
}

std::string UnshieldTomlText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    char32_t c = 0;
    size_t len = DecodeUtf8(text, &c);
    if (len == 0) len = 1;  // toml++ returns UTF-8; copy anything else as it is
    if (len == 4 && c >= kPlane15 && c <= kPlane15 + (kLastMoved - kFirstMoved)) {
      AppendUtf8(kFirstMoved + (c - kPlane15), out);
    } else {
      out.append(text.substr(0, len));
    }
    text.remove_prefix(len);
  }
  return out;
}

}  // namespace canhazgpu::config
