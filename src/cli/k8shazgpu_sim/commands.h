// The commands of k8shazgpu-sim, each taking the arguments after its name
// and returning the process's exit status.
#pragma once

#include <string>
#include <vector>

namespace canhazgpu::sim {

int ApiServerMain(const std::vector<std::string>& args);
int ClusterMain(const std::vector<std::string>& args);

}  // namespace canhazgpu::sim
