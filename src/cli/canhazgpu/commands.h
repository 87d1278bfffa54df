// The canhazgpu subcommands. Each takes the arguments after its name,
// prints its output, and returns the process exit code (cli/common/exit_code.h).
#pragma once

#include <string>
#include <vector>

#include "cli/canhazgpu/context.h"

namespace canhazgpu::cli {

using Args = std::vector<std::string>;

int AdminCommand(Context& ctx, const Args& args);
int StatusCommand(Context& ctx, const Args& args);
int ReserveCommand(Context& ctx, const Args& args);
int ReleaseCommand(Context& ctx, const Args& args);
int RunCommand(Context& ctx, const Args& args);
int QueueCommand(Context& ctx, const Args& args);

}  // namespace canhazgpu::cli
