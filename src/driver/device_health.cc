#include "driver/device_health.h"

#include <algorithm>

#include "core/duration.h"
#include "core/strings.h"

namespace canhazgpu::driver {
namespace {

using gpu::HealthProblem;
using gpu::HealthProblemKind;
using gpu::HealthSeverity;

const gpu::GpuHealth* FindGpu(const gpu::HealthSnapshot& health, int index) {
  for (const gpu::GpuHealth& g : health.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// Cuts to the kubelet's limit as the kubelet would ("..." at the end),
// never inside a UTF-8 sequence.
std::string Truncate(std::string message) {
  if (message.size() <= kMaxHealthMessageBytes) return message;
  size_t cut = kMaxHealthMessageBytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  return message + "...";
}

}  // namespace

std::vector<Taint> GpuTaints(const gpu::GpuHealth& gpu) {
  std::vector<Taint> taints;
  auto add = [&](const char* key, std::string value, const char* effect, const HealthProblem& p) {
    taints.push_back({key, std::move(value), effect, FormatTimestampSeconds(p.since)});
  };
  // One taint per key: a fatal XID outranks an informational one, which
  // must not lift the NoSchedule.
  const HealthProblem* xid = gpu.Find(HealthProblemKind::kXid, HealthSeverity::kFatal);
  const char* xid_effect = "NoSchedule";
  if (xid == nullptr) {
    xid = gpu.Find(HealthProblemKind::kXid, HealthSeverity::kInformational);
    xid_effect = "None";
  }
  if (xid != nullptr) add(kXidTaintKey, StrCat(xid->xid), xid_effect, *xid);
  for (const HealthProblem& p : gpu.problems) {
    switch (p.kind) {
      case HealthProblemKind::kGpuLost:
        // A lost GPU fails whatever runs on it: evict, don't just stop scheduling.
        add(kGpuLostTaintKey, "", "NoExecute", p);
        break;
      case HealthProblemKind::kEccRetirementPending:
        add(kEccRetirementPendingTaintKey, "", "NoSchedule", p);
        break;
      case HealthProblemKind::kUnmonitored:
        add(kUnmonitoredTaintKey, "", "None", p);
        break;
      case HealthProblemKind::kXid:
        break;  // above
    }
  }
  std::sort(taints.begin(), taints.end(),
            [](const Taint& a, const Taint& b) { return a.key < b.key; });
  return taints;
}

DeviceHealth GpuDeviceHealth(const gpu::GpuHealth& gpu) {
  DeviceHealth health;
  const bool unmonitored =
      std::any_of(gpu.problems.begin(), gpu.problems.end(),
                  [](const HealthProblem& p) { return p.kind == HealthProblemKind::kUnmonitored; });
  health.state = gpu.HasFatalProblem() ? DeviceHealth::State::kUnhealthy
                 : unmonitored         ? DeviceHealth::State::kUnknown
                                       : DeviceHealth::State::kHealthy;
  std::vector<std::string> parts;
  for (HealthSeverity severity : {HealthSeverity::kFatal, HealthSeverity::kInformational}) {
    for (const HealthProblem& p : gpu.problems) {
      if (p.severity == severity) parts.push_back(p.message);
    }
  }
  health.message = Truncate(Join(parts, "; "));
  return health;
}

std::map<std::string, std::vector<Taint>> DeviceTaints(const dra::DevicePool& pool,
                                                       const gpu::HealthSnapshot& health) {
  std::map<std::string, std::vector<Taint>> taints;
  for (const dra::Device& device : pool.devices) {
    const gpu::GpuHealth* gpu = FindGpu(health, device.gpu_index);
    if (gpu == nullptr) continue;
    std::vector<Taint> own = GpuTaints(*gpu);
    if (!own.empty()) taints[device.name] = std::move(own);
  }
  return taints;
}

std::vector<DeviceHealth> DeviceHealths(const dra::DevicePool& pool,
                                        const gpu::HealthSnapshot& health) {
  std::vector<DeviceHealth> out;
  for (const dra::Device& device : pool.devices) {
    const gpu::GpuHealth* gpu = FindGpu(health, device.gpu_index);
    DeviceHealth h;
    if (gpu == nullptr) {
      h.state = DeviceHealth::State::kUnknown;
      h.message = "health not monitored";
    } else {
      h = GpuDeviceHealth(*gpu);
    }
    h.pool = pool.pool;
    h.device = device.name;
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace canhazgpu::driver
