// What the k8shazgpu-sim commands do alike with their flags: parse, answer
// --help, check every value given, and read a flag or its default. Errors
// are printed as one line, "k8shazgpu-sim: ...".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/common/flags.h"

namespace canhazgpu::sim {

// Parses `args` of `command` into `*flags`. nullopt: go on; otherwise the
// exit status to return (0 after printing `usage` and the flags for
// --help, the usage status after an error).
std::optional<int> ParseCommandFlags(const std::vector<std::string>& args,
                                     const std::vector<cli::FlagSpec>& specs,
                                     const std::string& command, const char* usage,
                                     cli::ParsedFlags* flags);

// The flag's value as given, else its spec's default.
std::string FlagOrDefault(const cli::ParsedFlags& flags, const std::vector<cli::FlagSpec>& specs,
                          const std::string& name);

}  // namespace canhazgpu::sim
