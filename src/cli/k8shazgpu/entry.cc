// The entry point of k8shazgpu: global flags first or last, usage, version,
// dispatch; wires the real clock, user and terminal into the Context. The
// commands live in *_command.cc.
#include "cli/k8shazgpu/entry.h"

#include <unistd.h>

#include <cstdio>

#include "cli/common/dispatch.h"
#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/commands.h"
#include "core/strings.h"
#include "host/linux_process_table.h"
#include "host/signals.h"

namespace canhazgpu::cli::k8s {
namespace {

ProgramFront Front() {
  return {.name = "k8shazgpu",
          .version_line = StrCat("k8shazgpu ", CANHAZGPU_VERSION, " (", CANHAZGPU_GIT_COMMIT, ")"),
          .globals = GlobalFlags(),
          .globals_help =
              StrCat("\nglobal flags (before or after the command):\n", FlagHelp(GlobalFlags()),
                     "\n'k8shazgpu COMMAND --help' lists a command's flags.\n")};
}

}  // namespace

int Main(int argc, char** argv) {
  FrontChoice choice =
      ChooseCommand(Front(), Commands(), std::vector<std::string>(argv + 1, argv + argc));
  std::fputs(choice.out.c_str(), stdout);
  std::fputs(choice.err.c_str(), stderr);
  if (choice.exit_code) return *choice.exit_code;
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
  return Commands()[choice.command].run(ctx, choice.args);
}

}  // namespace canhazgpu::cli::k8s
