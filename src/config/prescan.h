// Nesting checks run on a config file's text before a parser sees it. The
// parsers recurse (toml++ crashes on a dotted key of 100,000 parts, before
// any of our code runs), so the depth is bounded on the raw text: a cheap
// scan that knows only enough of each syntax to skip strings and comments.
// Internal to canhazgpu::config; pure functions, thread-safe.
#pragma once

#include <string_view>

namespace canhazgpu::config {

// The 1-based line on which JSON `text` first nests arrays and objects
// deeper than `max_depth`, or 0 when it never does. Text that is not JSON
// gets an answer too; the parser then reports the syntax error.
int JsonTooDeepAt(std::string_view text, int max_depth);

// The same for TOML: the number of parts of a dotted key (`a.b.c = 1`,
// `[a.b.c]`, `x = {a.b = 1}`) plus the inline tables around it.
int TomlTooDeepAt(std::string_view text, int max_depth);

}  // namespace canhazgpu::config
