// `k8shazgpu vllm`: `run` (vllm_run.h), `package` and `unpack`
// (vllm_changes_command.cc).
#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/vllm_run.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

std::vector<FlagSpec> VllmFlags() { return VllmRunFlags(); }

int VllmCommand(Context& ctx, const Args& args) {
  if (!args.empty() && args[0] == "package") {
    return VllmPackageCommand(ctx, Args(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "unpack") {
    return VllmUnpackCommand(ctx, Args(args.begin() + 1, args.end()));
  }
  if (args.empty() || args[0] != "run") {
    return Fail(absl::InvalidArgumentError(
        StrCat(args.empty() ? std::string("no subcommand") : "unknown subcommand '" + args[0] + "'",
               " for 'vllm'; use: k8shazgpu vllm run [flags] -- vllm serve MODEL, vllm package ",
               "[-C DIR] [--fetch] --out FILE, or vllm unpack (FILE | --parts DIR) (--base DIR | ",
               "--mirror DIR --commit SHA) --to DIR")));
  }
  return RunCommandBody(ctx, Args(args.begin() + 1, args.end()), VllmFlags(), "vllm run", VllmRun);
}

}  // namespace canhazgpu::cli::k8s
