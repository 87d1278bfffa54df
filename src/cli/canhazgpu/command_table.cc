#include <algorithm>

#include "cli/canhazgpu/commands.h"

namespace canhazgpu::cli {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"status", "who has which GPU, since when, and what runs there", "[flags]", StatusFlags(),
       StatusCommand},
      {"reserve", "reserve GPUs for a while (manual reservation)", "[flags]", ReserveFlags(),
       ReserveCommand},
      {"run", "reserve GPUs for exactly as long as a command runs", "[flags] -- COMMAND [ARGS...]",
       RunFlags(), RunCommand},
      {"release", "release your reservations", "[flags]", ReleaseFlags(), ReleaseCommand},
      {"queue", "the requests waiting for GPUs, first come first served", "[flags]", QueueFlags(),
       QueueCommand},
      {"report", "GPU-hours per user, and how busy the GPUs really were", "[flags]", ReportFlags(),
       ReportCommand},
      {"web", "the dashboard: live status, queue and usage in a browser", "[flags]", WebFlags(),
       WebCommand},
      {"devices", "the GPUs and MIG instances as DRA devices (what --where selects on)", "[flags]",
       DevicesFlags(), DevicesCommand},
      {"admin", "detect the GPUs and initialize the pool", "[flags]", AdminFlags(), AdminCommand},
      {"config", "show every option's effective value and where it came from", "show [flags]",
       ConfigFlags(), ConfigCommand},
      {"completion",
       "shell completion: source <(canhazgpu completion bash), or zsh",
       "bash|zsh",
       {},
       CompletionCommand},
      {"debug", "developer tools: cel-conformance runs CEL conformance case files",
       "cel-conformance [--verbose] PATH...", DebugFlags(), DebugCommand},
      {"manpage", "the man page, in roff", "", {}, ManpageCommand, /*hidden=*/true},
  };
  return kCommands;
}

const CommandSpec* FindCommand(const std::string& name) { return FindIn(Commands(), name); }

std::vector<OptionScope> AllOptionScopes() {
  std::vector<OptionScope> scopes = {{"", SettingFlags()}};
  for (const CommandSpec& c : Commands()) scopes.push_back({c.name, c.flags});
  return scopes;
}

}  // namespace canhazgpu::cli
