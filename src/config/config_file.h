// A configuration file (YAML, JSON or TOML, chosen by extension) read into a
// flat list of dotted keys, each with the line it was written on, so that a
// later check can say "file:line: key: what is wrong". Nested tables become
// dotted keys: `run: {timeout: 2h}` and `run.timeout = "2h"` are the same.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::config {

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

// Reads and parses `path`. Syntax errors and values that are neither scalars
// nor lists of scalars are InvalidArgument "PATH:LINE: message".
absl::StatusOr<ConfigFile> LoadConfigFile(const std::string& path);

// The same from text already read; `path` names it in messages and picks
// the format by its extension (.yaml/.yml, .json, .toml).
absl::StatusOr<ConfigFile> ParseConfigText(const std::string& path, const std::string& text);

}  // namespace canhazgpu::config
