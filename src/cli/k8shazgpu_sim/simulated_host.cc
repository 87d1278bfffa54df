#include "cli/k8shazgpu_sim/simulated_host.h"

#include <cstdio>

#include "cli/k8shazgpu_sim/gpu_models.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::sim {
namespace {

using nlohmann::json;

std::string Uuid(const char* prefix, int node, int gpu, int instance) {
  char text[64];
  snprintf(text, sizeof(text), "%s-5a0de000-%04x-4000-8000-%08x%04x", prefix, node & 0xffff,
           gpu & 0xffffffff, instance & 0xffff);
  return text;
}

}  // namespace

SimulatedHostShape UniformHostShape(int gpus, int mig_gpus) {
  SimulatedHostShape shape;
  shape.gpus = gpus;
  for (int i = 0; i < mig_gpus && i < gpus; ++i)
    shape.mig[i] = std::vector<std::string>(7, "1g.10gb");
  return shape;
}

absl::Status CheckHostShape(const SimulatedHostShape& shape) {
  const GpuModel* model = FindGpuModel(shape.model);
  if (model == nullptr) {
    return absl::InvalidArgumentError(
        StrCat("unknown GPU model \"", shape.model, "\" (known: ", GpuModelNames(), ")"));
  }
  for (const auto& [gpu, profiles] : shape.mig) {
    if (gpu < 0 || gpu >= shape.gpus) {
      return absl::InvalidArgumentError(
          StrCat("MIG layout for GPU ", gpu, ", but the node has GPUs 0 to ", shape.gpus - 1));
    }
    absl::StatusOr<std::vector<MigPlacement>> placed = PlaceMigProfiles(*model, profiles);
    if (!placed.ok()) {
      return absl::InvalidArgumentError(StrCat("GPU ", gpu, ": ", placed.status().message()));
    }
  }
  return absl::OkStatus();
}

std::string SimulatedNodeName(int node) { return StrCat("node-", node); }

std::string SimulatedHostJson(int node, const SimulatedHostShape& shape) {
  const GpuModel* model = FindGpuModel(shape.model);
  if (model == nullptr) model = &GpuModels().front();
  json gpus = json::array();
  for (int i = 0; i < shape.gpus; ++i) {
    char bus[32];
    snprintf(bus, sizeof(bus), "0000:%02x:00.0", (i + 1) & 0xff);
    json gpu = {{"name", model->product_name},
                {"uuid", Uuid("GPU", node, i, 0)},
                {"pci_bus_id", bus},
                {"pcie_root", StrCat("pci0000:", i < shape.gpus / 2 ? "00" : "80")},
                {"architecture", model->architecture},
                {"compute_capability", model->compute_capability},
                {"memory_total_mib", model->memory_mib},
                {"processes", json::array()}};
    if (model->mig_profiles.empty()) gpu["mig_mode"] = "unsupported";
    auto layout = shape.mig.find(i);
    if (layout != shape.mig.end()) {
      gpu["mig_mode"] = "enabled";
      json instances = json::array();
      absl::StatusOr<std::vector<MigPlacement>> placed = PlaceMigProfiles(*model, layout->second);
      int n = 0;
      for (const MigPlacement& p : placed.value_or(std::vector<MigPlacement>{})) {
        instances.push_back({{"uuid", Uuid("MIG", node, i, ++n)},
                             {"profile", p.profile->name},
                             {"profile_id", p.profile->id},
                             {"placement_start", p.start},
                             {"placement_size", p.profile->slices},
                             {"memory_mib", p.profile->memory_mib}});
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
  for (const auto& [gpu, profiles] : shape.mig) {
    for (size_t m = 0; m < profiles.size(); ++m) {
      text += StrCat("gpu", gpu, "/gi", m + 1, "/access ", minor++, "\n");
      text += StrCat("gpu", gpu, "/gi", m + 1, "/ci0/access ", minor++, "\n");
    }
  }
  return text;
}

}  // namespace canhazgpu::sim
