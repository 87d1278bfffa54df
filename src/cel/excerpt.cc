// Source positions and quotes of source text for error messages. A selector
// can be 10 KiB long and hold newlines or terminal escapes; a message quotes
// a bounded, escaped piece of it so that it stays one short line.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "cel/functions.h"
#include "cel/parser.h"
#include "core/strings.h"

namespace canhazgpu::cel {
namespace {

// Bytes of a message's own text.
constexpr size_t kMessageBytes = 200;

// The length of the valid UTF-8 sequence at `i`, or 0.
size_t SequenceLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80             ? 1
             : (c & 0xE0) == 0xC0 ? 2
             : (c & 0xF0) == 0xE0 ? 3
             : (c & 0xF8) == 0xF0 ? 4
                                  : 0;
  if (n == 0 || i + n > s.size() || !IsValidUtf8(s.substr(i, n))) return 0;
  return n;
}

// `text` on one line: control characters (C0, DEL and C1, which terminals
// act on) and bytes that are not UTF-8 escaped. At most `limit` bytes out
// (an escape is four): where that cuts the text, "..." ends it.
std::string Escape(std::string_view text, size_t limit) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (out.size() >= limit) return out + "...";
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = SequenceLength(text, i);
    if (n == 0) {
      out += absl::StrFormat("\\x%02x", c);
      ++i;
      continue;
    }
    const bool c1 = n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += absl::StrFormat("\\x%02x", c);
    } else if (c1) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(text[i + 1]));
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

// Moves `pos` back to the start of the UTF-8 sequence it is inside.
size_t SequenceStart(std::string_view s, size_t pos) {
  for (int k = 0;
       k < 3 && pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80;
       ++k) {
    --pos;
  }
  return pos;
}

}  // namespace

std::string FormatLocation(std::string_view source, int32_t offset) {
  int line = 1, column = 1;
  for (int32_t i = 0; i < offset && i < static_cast<int32_t>(source.size()); ++i) {
    unsigned char c = source[i];
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return StrCat(line, ":", column);
}

std::string Excerpt(std::string_view source, int32_t offset, size_t width) {
  const size_t pos = std::min(static_cast<size_t>(std::max<int32_t>(offset, 0)), source.size());
  // A third of the window before the position, the rest after it; near the
  // end, more before.
  size_t begin = pos > width / 3 ? pos - width / 3 : 0;
  size_t end = std::min(source.size(), begin + width);
  begin = end > width ? std::min(begin, end - width) : 0;
  begin = SequenceStart(source, begin);
  end = SequenceStart(source, end);
  std::string quoted = Escape(source.substr(begin, end - begin), 2 * width);
  const bool cut = end < source.size() && !quoted.ends_with("...");
  return StrCat(begin > 0 ? "..." : "", quoted, cut ? "..." : "");
}

std::string BoundedMessage(std::string_view message) { return Escape(message, kMessageBytes); }

std::string FormatError(std::string_view source, int32_t offset, std::string_view message) {
  return StrCat(FormatLocation(source, offset), ": ", BoundedMessage(message), " (near '",
                Excerpt(source, offset), "')");
}

}  // namespace canhazgpu::cel
