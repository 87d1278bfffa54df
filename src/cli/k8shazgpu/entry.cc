// The entry point of k8shazgpu: global flags first or last, usage, version,
// dispatch; wires the real clock, user and terminal into the Context. The
// commands live in *_command.cc.
#include "cli/k8shazgpu/entry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli/common/dispatch.h"
#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/commands.h"
#include "core/strings.h"
#include "host/linux_process_table.h"
#include "host/signals.h"

namespace canhazgpu::cli::k8s {
namespace {

std::string Usage() {
  std::string out = "usage: k8shazgpu COMMAND [flags]\n\n";
  std::vector<std::pair<std::string, std::string>> commands;
  for (const CommandSpec& c : Commands()) {
    if (!c.hidden) commands.emplace_back(c.name, c.summary);
  }
  out += CommandList(commands);
  out += StrCat("\nglobal flags (before or after the command):\n", FlagHelp(GlobalFlags()),
                "\n'k8shazgpu COMMAND --help' lists a command's flags.\n");
  return out;
}

}  // namespace

int Main(int argc, char** argv) {
  absl::StatusOr<std::vector<std::string>> command_first =
      CommandFirst(std::vector<std::string>(argv + 1, argv + argc), GlobalFlags(), "k8shazgpu");
  if (!command_first.ok()) {
    std::fprintf(stderr, "k8shazgpu: %s\n", std::string(command_first.status().message()).c_str());
    return kExitUsage;
  }
  std::vector<std::string> args = *std::move(command_first);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(Usage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::printf("k8shazgpu %s (%s)\n", CANHAZGPU_VERSION, CANHAZGPU_GIT_COMMIT);
    return kExitOk;
  }
  if (args[0].starts_with("-")) {
    // Global flags and no command after them.
    std::fprintf(stderr, "k8shazgpu: no command after the global flags; see 'k8shazgpu --help'\n");
    return kExitUsage;
  }
  const CommandSpec* command = FindCommand(args[0]);
  if (command == nullptr) {
    std::vector<std::string> names;
    for (const CommandSpec& c : Commands()) names.push_back(c.name);
    std::fprintf(stderr, "k8shazgpu: %s\n", UnknownCommand("k8shazgpu", args[0], names).c_str());
    return kExitUsage;
  }
  if (AsksForHelp(args)) {
    std::fputs(CommandHelp("k8shazgpu", command->name, command->usage, command->summary,
                           command->flags, GlobalFlags())
                   .c_str(),
               stdout);
    return kExitOk;
  }
  // Output goes to pipes that may close early (`| head`); run must live to
  // clean up what it created.
  host::IgnoreBrokenPipes();
  const Clock& clock = RealClock();
  host::LinuxProcessTable processes;
  Context ctx;
  ctx.user = processes.UserName(getuid());
  ctx.clock = &clock;
  ctx.stdin_tty = isatty(STDIN_FILENO) == 1;
  ctx.stderr_tty = isatty(STDERR_FILENO) == 1;
  return command->run(ctx, Args(args.begin() + 1, args.end()));
}

}  // namespace canhazgpu::cli::k8s
