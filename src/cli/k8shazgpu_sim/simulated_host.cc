#include "cli/k8shazgpu_sim/simulated_host.h"

#include <cstdio>

#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::sim {
namespace {

using nlohmann::json;

// H100 80GB: 8 memory slices; the 1g.10gb profile (id 19) takes one, at
// placements 0 to 6, with 9856 MiB each.
constexpr int kOneSliceProfileId = 19;
constexpr int kOneSliceMemoryMib = 9856;

std::string Uuid(const char* prefix, int node, int gpu, int instance) {
  char text[64];
  snprintf(text, sizeof(text), "%s-5a0de000-%04x-4000-8000-%08x%04x", prefix, node & 0xffff,
           gpu & 0xffffffff, instance & 0xffff);
  return text;
}

}  // namespace

std::string SimulatedNodeName(int node) { return StrCat("node-", node); }

std::string SimulatedHostJson(int node, const SimulatedHostShape& shape) {
  json gpus = json::array();
  for (int i = 0; i < shape.gpus; ++i) {
    char bus[32];
    snprintf(bus, sizeof(bus), "0000:%02x:00.0", (i + 1) & 0xff);
    json gpu = {{"name", "NVIDIA H100 80GB HBM3"},
                {"uuid", Uuid("GPU", node, i, 0)},
                {"pci_bus_id", bus},
                {"pcie_root", StrCat("pci0000:", i < shape.gpus / 2 ? "00" : "80")},
                {"architecture", "Hopper"},
                {"compute_capability", "9.0"},
                {"memory_total_mib", 81559},
                {"processes", json::array()}};
    if (i < shape.mig_gpus) {
      gpu["mig_mode"] = "enabled";
      json instances = json::array();
      for (int m = 0; m < shape.instances_per_mig; ++m) {
        instances.push_back({{"uuid", Uuid("MIG", node, i, m + 1)},
                             {"profile", "1g.10gb"},
                             {"profile_id", kOneSliceProfileId},
                             {"placement_start", m},
                             {"placement_size", 1},
                             {"memory_mib", kOneSliceMemoryMib}});
      }
      gpu["mig_instances"] = instances;
    }
    gpus.push_back(gpu);
  }
  json doc = {{"driver_version", "550.54.15"}, {"cuda_driver_version", "12.4"}, {"gpus", gpus}};
  return doc.dump(2) + "\n";
}

std::string SimulatedMigMinors(const SimulatedHostShape& shape) {
  std::string text = "config 1\nmonitor 2\n";
  int minor = 3;
  for (int gpu = 0; gpu < shape.mig_gpus; ++gpu) {
    for (int m = 0; m < shape.instances_per_mig; ++m) {
      text += StrCat("gpu", gpu, "/gi", m + 1, "/access ", minor++, "\n");
      text += StrCat("gpu", gpu, "/gi", m + 1, "/ci0/access ", minor++, "\n");
    }
  }
  return text;
}

}  // namespace canhazgpu::sim
