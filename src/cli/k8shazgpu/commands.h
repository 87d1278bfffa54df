// The k8shazgpu subcommands. Each takes the arguments after its name,
// prints its output, and returns the process exit code (cli/common/
// exit_code.h; run returns its container's). Commands() is the one list of
// them: dispatch and help are made from it. To add a command: write
// NAME_command.cc with `int NameCommand(Context&, const Args&)` (usually
// RunCommandBody(ctx, args, NameFlags(), "name", body)), declare it and
// its flags here, add a row to Commands() in command_table.cc and the file
// to CMakeLists.txt.
#pragma once

#include <string>
#include <vector>

#include "cli/common/dispatch.h"
#include "cli/common/flags.h"
#include "cli/k8shazgpu/context.h"
#include "cli/k8shazgpu/run_request.h"

namespace canhazgpu::cli::k8s {

using Args = std::vector<std::string>;

using CommandSpec = Command<Context>;

const std::vector<CommandSpec>& Commands();
const CommandSpec* FindCommand(const std::string& name);

int RunCommand(Context& ctx, const Args& args);
int VllmCommand(Context& ctx, const Args& args);
// `vllm package` and `vllm unpack` (args after the subcommand's name);
// VllmCommand dispatches to them.
int VllmPackageCommand(Context& ctx, const Args& args);
int VllmUnpackCommand(Context& ctx, const Args& args);
int StatusCommand(Context& ctx, const Args& args);
int QueueCommand(Context& ctx, const Args& args);
int ExplainCommand(Context& ctx, const Args& args);
int ReserveCommand(Context& ctx, const Args& args);
int ReleaseCommand(Context& ctx, const Args& args);
int CleanupCommand(Context& ctx, const Args& args);
int CacheCommand(Context& ctx, const Args& args);
int CompletionCommand(Context& ctx, const Args& args);
int ManpageCommand(Context& ctx, const Args& args);

std::vector<FlagSpec> VllmFlags();
std::vector<FlagSpec> StatusFlags();
std::vector<FlagSpec> QueueFlags();
std::vector<FlagSpec> ExplainFlags();
std::vector<FlagSpec> ReserveFlags();
std::vector<FlagSpec> ReleaseFlags();
std::vector<FlagSpec> CleanupFlags();
std::vector<FlagSpec> CacheFlags();

// reserve's request: run's, with a placeholder command, the reservation
// label, --duration (default 8h) as the deadline and --wait (default 10m)
// as how long it may wait in line. InvalidArgument as ParseRunRequest's,
// and for any argument (reserve runs no command).
absl::StatusOr<RunRequest> ParseReserveRequest(const ParsedFlags& flags, const std::string& image);

}  // namespace canhazgpu::cli::k8s
