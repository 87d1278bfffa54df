// A configuration file (YAML, JSON or TOML, chosen by extension) read into a
// flat list of dotted keys, each with the line it was written on, so that a
// later check can say "file:line: key: what is wrong". Nested tables become
// dotted keys: `run: {timeout: 2h}` and `run.timeout = "2h"` are the same.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::config {

// What a config file may hold. A settings file is a few dozen keys; these
// bounds keep a hostile or broken file (a FIFO, a 15,000-deep JSON object, a
// YAML alias bomb) from hanging or crashing every command that reads it.
inline constexpr size_t kMaxConfigFileBytes = 1 << 20;  // 1 MiB
inline constexpr int kMaxConfigDepth = 64;              // nesting of tables and key parts
inline constexpr int kMaxConfigSettings = 1000;         // keys, counted after alias expansion
inline constexpr int kMaxConfigValues = 100000;         // scalars, list elements included

struct ConfigValue {
  std::string text;               // a scalar as written (true, 2048, 2h)
  std::vector<std::string> list;  // a list of scalars
  bool is_list = false;
  int line = 0;  // 1-based; 0 when the format cannot tell
};

struct ConfigFile {
  std::string path;
  std::map<std::string, ConfigValue> values;  // "run.timeout" -> value
};

// Reads and parses `path`. Syntax errors, values that are neither scalars nor
// lists of scalars, a NUL byte in a key or value and files past the bounds
// above are InvalidArgument "PATH:LINE: message" (or "PATH: message"). A path
// that is not a regular file (a FIFO, /dev/zero, a directory) is
// InvalidArgument too, found without reading from it.
absl::StatusOr<ConfigFile> LoadConfigFile(const std::string& path);

// The same from text already read; `path` names it in messages and picks
// the format by its extension (.yaml/.yml, .json, .toml; a file named just
// `.canhazgpu`, as the Go tool allowed, is YAML).
absl::StatusOr<ConfigFile> ParseConfigText(const std::string& path, const std::string& text);

}  // namespace canhazgpu::config
