// What `k8shazgpu-sim cluster` applies before the nodes start, as an admin
// installing k8shazgpu would (docs/cluster.md): deploy/'s DeviceClasses and
// CustomResourceDefinitions, compiled into the binary (addons.cc.in).
#pragma once

#include <string>
#include <vector>

namespace canhazgpu::sim {

struct Addon {
  std::string source;  // the file in the source tree, for messages
  std::string yaml;    // one or more documents
};

std::vector<Addon> Addons();

}  // namespace canhazgpu::sim
