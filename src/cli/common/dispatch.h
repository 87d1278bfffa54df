// What canhazgpu and k8shazgpu do alike before a command runs: the table
// of commands, and the front that reads argv against it (global flags,
// usage, --version, a command's --help, the line for a command that does
// not exist). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common/flags.h"

namespace canhazgpu::cli {

// One row of a program's command table. Each program's Context carries
// what its commands need.
template <typename Context>
struct Command {
  std::string name;
  std::string summary;  // one line for help
  std::string usage;    // after "PROGRAM NAME", e.g. "[flags] -- COMMAND [ARGS...]"
  std::vector<FlagSpec> flags;
  int (*run)(Context&, const std::vector<std::string>&);
  bool hidden = false;  // left out of help and completion
};

template <typename Context>
const Command<Context>* FindIn(const std::vector<Command<Context>>& commands,
                               const std::string& name) {
  for (const Command<Context>& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// What a program says of itself before any command runs.
struct ProgramFront {
  std::string name;          // "canhazgpu"
  std::string version_line;  // printed by --version
  std::vector<FlagSpec> globals;
  std::string globals_help;  // --help's text after the list of commands
};

// The part of a command the front reads.
struct FrontEntry {
  std::string name, summary, usage;
  const std::vector<FlagSpec>* flags;
  bool hidden = false;
};

// What the front decided. Either the program exits with `exit_code` after
// printing `out` and `err`, or commands[`command`] runs with `args` (the
// arguments after its name).
struct FrontChoice {
  std::optional<int> exit_code;
  std::string out, err;
  size_t command = 0;
  std::vector<std::string> args;
};

// `args` is argv without the program's name.
FrontChoice ChooseCommand(const ProgramFront& program, const std::vector<FrontEntry>& commands,
                          const std::vector<std::string>& args);

template <typename Context>
FrontChoice ChooseCommand(const ProgramFront& program,
                          const std::vector<Command<Context>>& commands,
                          const std::vector<std::string>& args) {
  std::vector<FrontEntry> docs;
  for (const Command<Context>& c : commands) {
    docs.push_back({c.name, c.summary, c.usage, &c.flags, c.hidden});
  }
  return ChooseCommand(program, docs, args);
}

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
