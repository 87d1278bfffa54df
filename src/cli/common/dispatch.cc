#include "cli/common/dispatch.h"

#include <algorithm>

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

}  // namespace canhazgpu::cli
