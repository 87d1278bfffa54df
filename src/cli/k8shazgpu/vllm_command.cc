// `k8shazgpu vllm run`: run with vLLM's defaults - its OpenAI-compatible
// server image, port 8000, and a memory-backed /dev/shm (what `docker run
// --ipc=host` gives it for PyTorch's shared-memory tensors). `vllm package`
// and `vllm unpack` live in vllm_changes_command.cc.
#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_command.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

inline constexpr char kDefaultVllmImage[] = "vllm/vllm-openai:latest";
inline constexpr int kVllmPort = 8000;

std::vector<FlagSpec> VllmFlags() { return RunFlags(); }

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
  return RunCommandBody(
      ctx, Args(args.begin() + 1, args.end()), VllmFlags(), "vllm run",
      [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
        ASSIGN_OR_RETURN(
            RunRequest request,
            ParseRunRequest(flags, {.image = c.Env("K8SHAZGPU_VLLM_IMAGE", kDefaultVllmImage),
                                    .port = kVllmPort,
                                    .shared_memory = true}));
        // The node's model cache (a later issue) mounts here: a hostPath of
        // the node's Hugging Face cache at /root/.cache/huggingface with
        // HF_HUB_CACHE set, so that models are not downloaded per run.
        return Run(c, request, DefaultRunHooks(*c.clock));
      });
}

}  // namespace canhazgpu::cli::k8s
