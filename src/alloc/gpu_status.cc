#include "alloc/gpu_status.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/strings.h"
#include "store/share_check.h"

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

namespace {

// GpuStatus::share_overuse of `s`, whose shares and processes are filled in.
std::vector<std::string> ShareOveruse(const GpuStatus& s, uint64_t threshold) {
  struct Use {
    std::string user;
    uint64_t used = 0, share = 0;
  };
  std::map<uint32_t, Use> by_uid;
  std::vector<uint32_t> order;  // first seen, for a stable message
  auto use_of = [&](uint32_t uid, const std::string& user) -> Use& {
    auto [it, added] = by_uid.try_emplace(uid, Use{.user = user});
    if (added) order.push_back(uid);
    return it->second;
  };
  for (const Reservation& r : s.shares) use_of(r.uid, r.user).share += r.memory;
  for (const ProcessUsage& p : s.processes) use_of(p.uid, p.user).used += p.used_memory_bytes;
  std::vector<std::string> out;
  for (uint32_t uid : order) {
    const Use& u = by_uid[uid];
    if (u.share == 0 && u.used > threshold) {
      out.push_back(StrCat(u.user, " uses ", store::FormatBytes(u.used), " without a share"));
    } else if (u.share > 0 && u.used > u.share) {
      out.push_back(StrCat(u.user, " uses ", store::FormatBytes(u.used), ", ",
                           store::FormatBytes(u.used - u.share), " over a ",
                           store::FormatBytes(u.share), " share"));
    }
  }
  return out;
}

}  // namespace

std::vector<GpuStatus> BuildStatus(const StatusInput& input) {
  std::vector<GpuStatus> out;
  for (int id = 0; id < input.gpu_count; ++id) {
    GpuStatus s{.gpu = id};
    for (const Reservation& r : input.reservations) {
      if (r.gpu != id) continue;
      if (!s.reservation) s.reservation = r;
      if (r.IsShare()) s.shares.push_back(r);
    }
    // Oldest share first (then by user): the order status lists holders in.
    std::sort(s.shares.begin(), s.shares.end(), [](const Reservation& a, const Reservation& b) {
      return std::tie(a.start, a.user, a.share) < std::tie(b.start, b.user, b.share);
    });
    if (!s.shares.empty()) s.reservation = s.shares.front();
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
    if (!s.shares.empty()) s.share_overuse = ShareOveruse(s, input.threshold_bytes);
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
