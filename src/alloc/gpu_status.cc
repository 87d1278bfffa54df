#include "alloc/gpu_status.h"

#include <algorithm>

#include "core/strings.h"

namespace canhazgpu::alloc {
namespace {

constexpr int kParentLevels = 3;

std::optional<ModelInfo> ModelOfProcessTree(const std::optional<host::ProcessInfo>& process,
                                            const host::ProcessTable& table) {
  std::optional<host::ProcessInfo> current = process;
  for (int level = 0; current && level <= kParentLevels; ++level) {
    if (auto model = DetectModel(current->argv)) return model;
    if (current->ppid <= 1) break;
    current = table.Find(current->ppid);
  }
  return std::nullopt;
}

}  // namespace

std::string_view StateName(GpuState state) {
  switch (state) {
    case GpuState::kAvailable:
      return "AVAILABLE";
    case GpuState::kInUse:
      return "IN_USE";
    case GpuState::kUnreserved:
      return "UNRESERVED";
    case GpuState::kError:
      return "ERROR";
  }
  return "ERROR";
}

std::vector<ProcessUsage> DescribeProcesses(const GpuInfo& gpu,
                                            const host::ProcessTable& processes) {
  std::vector<ProcessUsage> out;
  for (const GpuProcess& p : gpu.processes) {
    ProcessUsage usage{.pid = p.pid, .user = "unknown", .used_memory_bytes = p.used_memory_bytes};
    // Processes in other pid namespaces (containers) are not visible here.
    std::optional<host::ProcessInfo> info = processes.Find(p.pid);
    if (info) {
      usage.uid = info->uid;
      usage.user = processes.UserName(info->uid);
      std::vector<std::string> argv = info->argv;
      usage.command = Join(argv, " ");
    }
    usage.model = ModelOfProcessTree(info, processes);
    out.push_back(std::move(usage));
  }
  return out;
}

std::vector<std::string> ProcessUsers(const std::vector<ProcessUsage>& processes) {
  std::vector<std::string> users;
  for (const ProcessUsage& p : processes) {
    if (std::find(users.begin(), users.end(), p.user) == users.end()) users.push_back(p.user);
  }
  return users;
}

std::vector<GpuUsage> DescribeGpus(const std::vector<GpuInfo>& gpus,
                                   const host::ProcessTable& processes) {
  std::vector<GpuUsage> out;
  for (const GpuInfo& gpu : gpus) {
    GpuUsage usage{.info = gpu, .processes = DescribeProcesses(gpu, processes)};
    for (const ProcessUsage& p : usage.processes) {
      if (p.model) {
        usage.model = p.model;
        break;
      }
    }
    out.push_back(std::move(usage));
  }
  return out;
}

std::vector<GpuStatus> BuildStatus(const StatusInput& input) {
  std::vector<GpuStatus> out;
  for (int id = 0; id < input.gpu_count; ++id) {
    GpuStatus s{.gpu = id};
    auto reservation = std::find_if(input.reservations.begin(), input.reservations.end(),
                                    [id](const Reservation& r) { return r.gpu == id; });
    if (reservation != input.reservations.end()) s.reservation = *reservation;
    auto released = input.last_released.find(id);
    if (released != input.last_released.end()) s.last_released = released->second;
    if (static_cast<size_t>(id) < input.gpus.size()) {
      const GpuUsage& usage = input.gpus[static_cast<size_t>(id)];
      s.info = usage.info;
      s.error = usage.info.error;
      s.processes = usage.processes;
      s.model = usage.model;
    } else {
      s.error = StrCat("not reported by the ", input.provider, " provider");
    }
    if (s.reservation) {
      s.state = GpuState::kInUse;
    } else if (!s.error.empty()) {
      s.state = GpuState::kError;
    } else if (s.info->memory_used_bytes > input.threshold_bytes) {
      s.state = GpuState::kUnreserved;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace canhazgpu::alloc
