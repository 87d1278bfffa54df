#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_request.h"
#include "cli/k8shazgpu/workdir_sync.h"

namespace canhazgpu::cli::k8s {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"run", "run a command in a pod with GPUs; wait in line, stream its output",
       "[flags] -- COMMAND [ARGS...]", RunCommandFlags(), RunCommand},
      {"vllm",
       "vllm run: run vLLM with its defaults (image, port 8000, shared memory); vllm package: "
       "your checkout's changes since the merge-base into a bundle; vllm unpack: apply one",
       "run [flags] -- vllm serve MODEL [ARGS...] | package [-C DIR] [--fetch] --out FILE | "
       "unpack FILE --base DIR --to DIR",
       VllmFlags(), VllmCommand},
      {"status", "every GPU of the cluster by node: who holds it, since when, or why not free",
       "[flags]", StatusFlags(), StatusCommand},
      {"queue", "the pods waiting for devices, in order, and why each waits", "[flags]",
       QueueFlags(), QueueCommand},
      {"explain", "why a pod or ResourceClaim waits: per node, selector, constraint and holder",
       "POD|CLAIM [flags]", ExplainFlags(), ExplainCommand},
      {"reserve", "hold GPUs without a job (a placeholder pod); print how to get a shell there",
       "[flags]", ReserveFlags(), ReserveCommand},
      {"release", "end your reservation NAME, or all of yours in the namespace", "[NAME] [flags]",
       ReleaseFlags(), ReleaseCommand},
      {"cleanup", "delete your runs and everything they created, found by their labels",
       "--name NAME | --all [flags]", CleanupFlags(), CleanupCommand},
      {"cache", "the cache plan: images, repositories and models the nodes keep warm",
       "plan show | status | add image|repo|model SOURCE | remove NAME... | update NAME...|--all "
       "[flags]",
       CacheFlags(), CacheCommand},
      {"completion",
       "shell completion: source <(k8shazgpu completion bash), or zsh",
       "bash|zsh",
       {},
       CompletionCommand},
      {"manpage", "the man page, in roff", "", {}, ManpageCommand, /*hidden=*/true},
  };
  return kCommands;
}

const CommandSpec* FindCommand(const std::string& name) { return FindIn(Commands(), name); }

}  // namespace canhazgpu::cli::k8s
