#include "cli/k8shazgpu/commands.h"
#include "cli/k8shazgpu/run_request.h"

namespace canhazgpu::cli::k8s {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"run", "run a command in a pod with GPUs; wait in line, stream its output",
       "[flags] -- COMMAND [ARGS...]", RunFlags(), RunCommand},
      {"vllm", "vllm run: run vLLM with its defaults (image, port 8000, shared memory)",
       "run [flags] -- vllm serve MODEL [ARGS...]", VllmFlags(), VllmCommand},
  };
  return kCommands;
}

const CommandSpec* FindCommand(const std::string& name) {
  for (const CommandSpec& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace canhazgpu::cli::k8s
