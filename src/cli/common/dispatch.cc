#include "cli/common/dispatch.h"

#include <algorithm>

#include "cli/common/exit_code.h"
#include "core/strings.h"

namespace canhazgpu::cli {

std::string CommandList(const std::vector<std::pair<std::string, std::string>>& commands) {
  size_t width = 0;
  for (const auto& [name, summary] : commands) width = std::max(width, name.size());
  std::string out;
  for (const auto& [name, summary] : commands) {
    out += StrCat("  ", name, std::string(width + 2 - name.size(), ' '), summary, "\n");
  }
  return out;
}

bool AsksForHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

std::string CommandHelp(const std::string& program, const std::string& name,
                        const std::string& usage, const std::string& summary,
                        const std::vector<FlagSpec>& flags, const std::vector<FlagSpec>& globals) {
  const size_t column = FlagHelpColumn({flags, globals});
  std::string out = StrCat("usage: ", program, " ", name, " ", usage, "\n\n", summary, "\n\n");
  // A command without flags of its own (completion) has no empty heading.
  if (const std::string own = FlagHelp(flags, column); !own.empty()) {
    out += StrCat("flags:\n", own, "\n");
  }
  return StrCat(out, "global flags:\n", FlagHelp(globals, column));
}

std::string UnknownCommand(const std::string& program, const std::string& typed,
                           const std::vector<std::string>& commands) {
  std::string suggestion;
  for (const std::string& c : commands) {
    if (EditDistance(typed, c) <= 2) suggestion = StrCat(" (did you mean '", c, "'?)");
  }
  return StrCat("unknown command '", typed, "'", suggestion, "; see '", program, " --help'");
}

namespace {

FrontChoice Exit(int code, std::string out, std::string err) {
  return {.exit_code = code, .out = std::move(out), .err = std::move(err)};
}

FrontChoice UsageError(const ProgramFront& program, const std::string& message) {
  return Exit(kExitUsage, "", StrCat(program.name, ": ", message, "\n"));
}

std::string Usage(const ProgramFront& program, const std::vector<FrontEntry>& commands) {
  std::vector<std::pair<std::string, std::string>> listed;
  for (const FrontEntry& c : commands) {
    if (!c.hidden) listed.emplace_back(c.name, c.summary);
  }
  return StrCat("usage: ", program.name, " COMMAND [flags]\n\n", CommandList(listed),
                program.globals_help);
}

}  // namespace

FrontChoice ChooseCommand(const ProgramFront& program, const std::vector<FrontEntry>& commands,
                          const std::vector<std::string>& argv_args) {
  absl::StatusOr<std::vector<std::string>> command_first =
      CommandFirst(argv_args, program.globals, program.name);
  if (!command_first.ok())
    return UsageError(program, std::string(command_first.status().message()));
  std::vector<std::string> args = *std::move(command_first);
  if (args.empty()) return Exit(kExitUsage, "", Usage(program, commands));
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    return Exit(kExitOk, Usage(program, commands), "");
  }
  if (args[0] == "--version") return Exit(kExitOk, StrCat(program.version_line, "\n"), "");
  if (args[0].starts_with("-")) {
    return UsageError(program,
                      StrCat("no command after the global flags; see '", program.name, " --help'"));
  }
  auto it = std::find_if(commands.begin(), commands.end(),
                         [&](const FrontEntry& c) { return c.name == args[0]; });
  if (it == commands.end()) {
    std::vector<std::string> names;
    for (const FrontEntry& c : commands) names.push_back(c.name);
    return UsageError(program, UnknownCommand(program.name, args[0], names));
  }
  if (AsksForHelp(args)) {
    return Exit(
        kExitOk,
        CommandHelp(program.name, it->name, it->usage, it->summary, *it->flags, program.globals),
        "");
  }
  return {.command = static_cast<size_t>(it - commands.begin()),
          .args = std::vector<std::string>(args.begin() + 1, args.end())};
}

}  // namespace canhazgpu::cli
