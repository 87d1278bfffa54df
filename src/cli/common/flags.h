// Command-line flags: --name value, --name=value, -n value, and `--` ending
// the flags. Every error is one line naming the flag, with a "did you mean"
// for near misses. Pure; no global state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::cli {

struct FlagSpec {
  std::string name;     // "gpus" for --gpus
  char short_name = 0;  // 'g' for -g
  bool has_value = false;
  std::string value_name;  // "N", shown in help
  std::string help;
};

struct ParsedFlags {
  std::map<std::string, std::string> values;  // flags with values
  std::map<std::string, bool> switches;       // flags without values
  std::vector<std::string> positional;        // before `--`
  bool saw_separator = false;
  std::vector<std::string> rest;  // after `--`

  bool Has(const std::string& name) const {
    return values.contains(name) || switches.contains(name);
  }
  std::optional<std::string> Value(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

// Parses `args` (without the program and command names) against `specs`.
// `command` names the command in messages. A flag given twice is an error.
absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs,
                                       const std::string& command);

// "  -g, --gpus N      how many GPUs" lines for help output.
std::string FlagHelp(const std::vector<FlagSpec>& specs);

// Parses a positive integer flag value, or InvalidArgument naming the flag.
absl::StatusOr<int> PositiveInt(const std::string& flag, const std::string& value);

}  // namespace canhazgpu::cli
