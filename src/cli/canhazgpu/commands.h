// The canhazgpu subcommands. Each takes the arguments after its name,
// prints its output, and returns the process exit code (cli/common/exit_code.h).
// Commands() is the one list of them: dispatch, help, `config show`, the
// shell completions and the man page are all made from it.
#pragma once

#include <string>
#include <vector>

#include "cli/canhazgpu/context.h"
#include "cli/common/dispatch.h"
#include "cli/common/option_layers.h"

namespace canhazgpu::cli {

using Args = std::vector<std::string>;

using CommandSpec = Command<Context>;

const std::vector<CommandSpec>& Commands();
const CommandSpec* FindCommand(const std::string& name);

// The global options and each command's, as config files and the
// environment name them.
std::vector<OptionScope> AllOptionScopes();

int AdminCommand(Context& ctx, const Args& args);
int StatusCommand(Context& ctx, const Args& args);
int ReserveCommand(Context& ctx, const Args& args);
int ReleaseCommand(Context& ctx, const Args& args);
int RunCommand(Context& ctx, const Args& args);
int QueueCommand(Context& ctx, const Args& args);
int ConfigCommand(Context& ctx, const Args& args);
int ReportCommand(Context& ctx, const Args& args);
int WebCommand(Context& ctx, const Args& args);
int CompletionCommand(Context& ctx, const Args& args);
int ManpageCommand(Context& ctx, const Args& args);
int DebugCommand(Context& ctx, const Args& args);
int DevicesCommand(Context& ctx, const Args& args);
// canhazgpu-web registers its server here; without one, `web` execs
// canhazgpu-web from the directory of the running binary.
void SetWebServer(int (*serve)(Context&, const Args&));

std::vector<FlagSpec> AdminFlags();
std::vector<FlagSpec> StatusFlags();
std::vector<FlagSpec> ReserveFlags();
std::vector<FlagSpec> ReleaseFlags();
std::vector<FlagSpec> RunFlags();
std::vector<FlagSpec> QueueFlags();
std::vector<FlagSpec> ConfigFlags();
std::vector<FlagSpec> ReportFlags();
std::vector<FlagSpec> WebFlags();
std::vector<FlagSpec> DebugFlags();
std::vector<FlagSpec> DevicesFlags();

}  // namespace canhazgpu::cli
