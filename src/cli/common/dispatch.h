// What canhazgpu and k8shazgpu do alike before a command runs: the list of
// commands in --help, a command's own --help, and the line for a command
// that does not exist. Pure; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/common/flags.h"

namespace canhazgpu::cli {

// "  name      summary" lines, the summaries aligned after the longest name.
std::string CommandList(const std::vector<std::pair<std::string, std::string>>& commands);

// Whether --help or -h comes before `--` (after it, they are the command's).
bool AsksForHelp(const std::vector<std::string>& args);

// "usage: PROGRAM NAME USAGE", the summary, the command's flags and the
// global ones.
std::string CommandHelp(const std::string& program, const std::string& name,
                        const std::string& usage, const std::string& summary,
                        const std::vector<FlagSpec>& flags, const std::vector<FlagSpec>& globals);

// "unknown command 'stauts' (did you mean 'status'?); see 'PROGRAM --help'"
std::string UnknownCommand(const std::string& program, const std::string& typed,
                           const std::vector<std::string>& commands);

}  // namespace canhazgpu::cli
