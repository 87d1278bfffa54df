// The layers an option's value comes from, highest first: the command line,
// the environment (CANHAZGPU_<KEY>, `_` standing for `.` and `-`), a config
// file, the flag's default. Every command's flags are options: `--timeout`
// of `run` is the key `run.timeout` and the variable CANHAZGPU_RUN_TIMEOUT;
// global flags have no command prefix (`memory-threshold`,
// CANHAZGPU_MEMORY_THRESHOLD).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "cli/common/flags.h"
#include "config/config_file.h"

namespace canhazgpu::cli {

// A command's options: `scope` is the command name, or "" for the global ones.
struct OptionScope {
  std::string scope;
  std::vector<FlagSpec> specs;
};

// "run.timeout" for scope "run", "state" for the global scope.
std::string OptionKey(std::string_view scope, std::string_view flag);

// CANHAZGPU_RUN_TIMEOUT for "run.timeout": upper case, `.` and `-` as `_`.
// Config file keys are matched the same way, so `memory.threshold`,
// `memory-threshold` and `memory_threshold` name one option. k8shazgpu-node
// reads K8SHAZGPU_<FLAG> instead (its DaemonSet's way).
inline constexpr std::string_view kEnvPrefix = "CANHAZGPU_";
std::string EnvName(std::string_view key, std::string_view prefix = kEnvPrefix);

struct OptionSources {
  const config::ConfigFile* file = nullptr;  // none when null
  std::function<std::optional<std::string>(const std::string& name)> getenv;
  std::string_view env_prefix = kEnvPrefix;
};

// Gives every flag of `scope` that the command line left unset its value
// from the environment, else the file, else its default, recording the
// origin. Command-line values are checked against the flag's kind too. A bad
// value is InvalidArgument naming where it came from.
absl::Status ApplyOptionLayers(const OptionScope& scope, const OptionSources& sources,
                               ParsedFlags& flags);

// Every key of `file` must name an option of one of `scopes`, with a value
// of the option's kind: otherwise InvalidArgument "PATH:LINE: ...".
absl::Status CheckConfigFile(const config::ConfigFile& file,
                             const std::vector<OptionScope>& scopes);

// Where a value came from, for `config show`: "default", "command line", an
// environment variable name or "FILE:LINE".
std::string DescribeOrigin(const FlagOrigin& origin);

}  // namespace canhazgpu::cli
