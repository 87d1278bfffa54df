// Command-line flags: --name value, --name=value, -n value, and `--` ending
// the flags. Every error is one line naming the flag, with a "did you mean"
// for near misses. Pure; no global state.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::cli {

// What a flag's value must look like; checked the same way whether it came
// from the command line, the environment or a config file.
enum class FlagKind {
  kText,
  kCount,        // an integer from 0 to FlagSpec::max
  kPositiveInt,  // an integer from 1 to FlagSpec::max
  kDuration,     // 30m, 2h, 1h30m
  kGpuIds,       // 1,3
  kList,         // comma-separated on the command line and in the environment
  kChoice,       // one of FlagSpec::choices
  kQuantity,     // a Kubernetes quantity of at least 0 (500Gi, 1.5T); QuantityValue reads it
};

struct FlagSpec {
  std::string name;     // "gpus" for --gpus
  char short_name = 0;  // 'g' for -g
  bool has_value = false;
  std::string value_name;  // "N", shown in help
  std::string help;
  FlagKind kind = FlagKind::kText;
  // The largest value of a kCount or kPositiveInt flag. Every integer flag is
  // bounded, so no value wraps when it is scaled (MiB to bytes, days to ms).
  int64_t max = std::numeric_limits<int32_t>::max();
  std::vector<std::string> choices;  // the values a kChoice flag takes
  std::string default_value;         // applied when no layer sets the flag
  bool config_only = false;          // a setting, not accepted on the command line
  // When this flag and `overrides` are both set by different layers, the
  // one from the higher layer wins (a --wait flag beats nonblock: true in a
  // config file); set by the same layer they are left for the command to
  // reject.
  std::string overrides;
  // May be given more than once on the command line (--env K=V --env
  // K2=V2): every value is kept in ParsedFlags::repeated, in order, and
  // `values` holds the last.
  bool repeatable = false;
};

// Where a flag's value came from, highest last.
enum class FlagSource { kDefault, kConfigFile, kEnvironment, kCommandLine };

struct FlagOrigin {
  FlagSource source = FlagSource::kDefault;
  std::string where;  // "--gpus", "CANHAZGPU_RUN_GPUS", "/etc/x.yaml:3", "default"
};

struct ParsedFlags {
  std::map<std::string, std::string> values;  // flags with values
  std::map<std::string, bool> switches;       // flags without values
  std::vector<std::string> positional;        // before `--`
  bool saw_separator = false;
  std::vector<std::string> rest;              // after `--`
  std::map<std::string, FlagOrigin> origins;  // every flag some layer set
  // Every value of a repeatable flag, in command-line order.
  std::map<std::string, std::vector<std::string>> repeated;

  // Removes a flag (a value or a switch) and its origin.
  void Erase(const std::string& name) {
    values.erase(name);
    repeated.erase(name);
    switches.erase(name);
    origins.erase(name);
  }

  bool Has(const std::string& name) const {
    return values.contains(name) || switches.contains(name);
  }
  // Every value of a repeatable flag (the one value of another), in order.
  std::vector<std::string> Values(const std::string& name) const {
    if (auto it = repeated.find(name); it != repeated.end()) return it->second;
    if (auto it = values.find(name); it != values.end()) return {it->second};
    return {};
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

// kubectl's and cobra's convention, which the Go canhazgpu followed: global
// flags may come before the subcommand. Returns `args` (without the program
// name) with the subcommand first and the global flags given before it
// moved right after it, in their order, so that the command's own parser
// sees them: {"--state", "F", "status", "-v"} -> {"status", "--state", "F",
// "-v"}. `args` that start with the subcommand, or with --help, -h or
// --version, are returned unchanged, as are global flags with no
// subcommand after them (the caller prints its usage). A flag before the
// subcommand that is not a global one is an error naming it; `program`
// names the program in it.
absl::StatusOr<std::vector<std::string>> CommandFirst(const std::vector<std::string>& args,
                                                      const std::vector<FlagSpec>& globals,
                                                      const std::string& program);

// Checks `value` against the flag's kind and range; no value may hold a NUL
// byte. The error either says what was expected ("expected an integer from
// 1 to 1024") or, from the duration and GPU id
// parsers, quotes the value itself ("invalid duration '5x': ..."); it never
// says where the value came from (see DescribeBadValue in option_layers.h).
absl::Status CheckFlagValue(const FlagSpec& spec, const std::string& value);

// Reads a switch's value from the environment or a config file: true/false,
// yes/no, on/off, 1/0.
absl::StatusOr<bool> ParseSwitch(const std::string& value);

// "  -g, --gpus N      how many GPUs" lines for help output, the help texts
// starting at `column` (0: two spaces after the longest flag of `specs`).
std::string FlagHelp(const std::vector<FlagSpec>& specs, size_t column = 0);

// The column FlagHelp starts help texts at for all of `lists` alike, so
// that a command's flags and the global ones line up.
size_t FlagHelpColumn(const std::vector<std::vector<FlagSpec>>& lists);

// Parses a positive integer flag value, or InvalidArgument naming the flag.
absl::StatusOr<int> PositiveInt(const std::string& flag, const std::string& value);

}  // namespace canhazgpu::cli
