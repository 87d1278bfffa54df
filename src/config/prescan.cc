#include "config/prescan.h"

#include <vector>

namespace canhazgpu::config {
namespace {

// Returns the index of the last character of the string that opens at
// text[i] (a quote), counting the newlines it crosses into *line. TOML's
// triple-quoted strings span lines; `escapes` is false for literal strings.
// An unterminated string runs to the end, where the parser reports it.
size_t SkipString(std::string_view text, size_t i, bool escapes, int* line) {
  const char quote = text[i];
  const std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
  const bool multi = text.substr(i, 3) == triple;
  size_t j = i + (multi ? 3 : 1);
  for (; j < text.size(); ++j) {
    if (text[j] == '\n') {
      ++*line;
      if (!multi) return j - 1;  // let the caller see the newline
    } else if (escapes && text[j] == '\\') {
      if (j + 1 < text.size() && text[j + 1] == '\n') ++*line;
      ++j;
    } else if (text[j] == quote && (!multi || text.substr(j, 3) == triple)) {
      return multi ? j + 2 : j;
    }
  }
  return text.size();
}

// One open '[' or '{' in a TOML value, and the depth to return to.
struct Open {
  char bracket;
  int outer_base;
};

}  // namespace

int JsonTooDeepAt(std::string_view text, int max_depth) {
  int depth = 0;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      i = SkipString(text, i, /*escapes=*/true, &line);
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return line;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return 0;
}

// A small state machine over TOML's structure: a key's parts are counted up
// to its '=', a [table.header]'s up to its ']', and inline tables and arrays
// add the depth of the key that holds them.
int TomlTooDeepAt(std::string_view text, int max_depth) {
  enum class Mode { kKey, kHeader, kValue, kSkipLine };
  Mode mode = Mode::kKey;
  std::vector<Open> open;
  int line = 1;
  int header_parts = 0;  // parts of the last [table] header
  int base = 0;          // depth of the table the current key is in
  int parts = 1;         // parts of the key or header being read
  int value_depth = 0;   // depth of the value being read
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      if (open.empty()) {
        mode = Mode::kKey;
        base = header_parts;
        parts = 1;
      }
      continue;
    }
    if (mode == Mode::kSkipLine) continue;
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = SkipString(text, i, /*escapes=*/c == '"', &line);
      continue;
    }
    switch (mode) {
      case Mode::kKey:
        if (c == '.' && base + ++parts > max_depth) return line;
        if (c == '=') {
          mode = Mode::kValue;
          value_depth = base + parts;
        } else if (c == '[' && open.empty()) {
          mode = Mode::kHeader;
          parts = 1;
        }
        break;
      case Mode::kHeader:
        if (c == '.' && ++parts > max_depth) return line;
        if (c == ']') {
          header_parts = parts;
          mode = Mode::kSkipLine;
        }
        break;
      case Mode::kValue:
        if (c == '{' || c == '[') {
          open.push_back({c, base});
          base = value_depth + (c == '[' ? 1 : 0);
          if (base + 1 > max_depth) return line;
          value_depth = base;
          parts = 1;
          if (c == '{') mode = Mode::kKey;
        } else if ((c == '}' || c == ']') && !open.empty()) {
          base = open.back().outer_base;
          open.pop_back();
        } else if (c == ',' && !open.empty()) {
          value_depth = base;
          parts = 1;
          if (open.back().bracket == '{') mode = Mode::kKey;
        }
        break;
      case Mode::kSkipLine:
        break;
    }
    // An inline table closes from key mode too: `x = {}`.
    if (mode == Mode::kKey && c == '}' && !open.empty()) {
      base = open.back().outer_base;
      open.pop_back();
      mode = Mode::kValue;
    }
  }
  return 0;
}

}  // namespace canhazgpu::config
