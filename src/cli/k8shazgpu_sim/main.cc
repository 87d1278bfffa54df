// k8shazgpu-sim: the simulated Kubernetes cluster that tests, benchmarks and
// the demo run against.
//   k8shazgpu-sim apiserver ...   only the API server (apiserver_command.cc)
//   k8shazgpu-sim cluster ...     API server, nodes with the real node driver,
//                                 kubelets and a scheduler (cluster_command.cc)
#include <iostream>
#include <string>
#include <vector>

#include "cli/common/exit_code.h"
#include "cli/k8shazgpu_sim/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: k8shazgpu-sim COMMAND [flags]\n"
    "A simulated Kubernetes cluster on this machine, for tests, benchmarks and demos.\n"
    "\n"
    "commands:\n"
    "  apiserver   serve only the simulated API server\n"
    "  cluster     a whole cluster: API server, nodes running k8shazgpu-node on\n"
    "              simulated GPUs, kubelets that run pods as local processes,\n"
    "              and a scheduler that allocates their GPUs\n"
    "\n"
    "'k8shazgpu-sim COMMAND --help' lists a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? canhazgpu::cli::kExitUsage : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "apiserver") return canhazgpu::sim::ApiServerMain(args);
  if (command == "cluster") return canhazgpu::sim::ClusterMain(args);
  std::cerr << "k8shazgpu-sim: unknown command '" << command << "'; see 'k8shazgpu-sim --help'\n";
  return canhazgpu::cli::kExitUsage;
}
