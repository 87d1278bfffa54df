#include "host/process_table.h"

#include <map>

#include "host/job_cgroup.h"

namespace canhazgpu::host {
namespace {

bool IsRunning(const ProcessInfo& p) { return p.state != 'Z' && p.state != 'X'; }

// The state file is shared: a directory that is not this job's cgroup (a
// damaged or doctored entry) is not read at all.
bool IsCgroupOf(const std::string& dir, const ProcessRef& leader) {
  size_t slash = dir.rfind('/');
  std::string_view name = std::string_view(dir).substr(slash == std::string::npos ? 0 : slash + 1);
  return ParseJobCgroupName(name) == leader;
}

}  // namespace

bool ProcessTable::IsAlive(const ProcessRef& ref) const {
  std::optional<ProcessInfo> info = FindBasic(ref.pid);
  return info.has_value() && info->start_ticks == ref.start_ticks && IsRunning(*info);
}

std::vector<ProcessInfo> ProcessTable::Descendants(int64_t root) const {
  std::vector<ProcessInfo> all = ListBasic();
  std::multimap<int64_t, const ProcessInfo*> children;
  for (const ProcessInfo& p : all) children.emplace(p.ppid, &p);
  std::vector<ProcessInfo> out;
  std::vector<int64_t> frontier = {root};
  // A pid is visited once, so a table read mid-change (a pid reused under a
  // new parent) cannot loop.
  std::map<int64_t, bool> seen = {{root, true}};
  while (!frontier.empty()) {
    int64_t parent = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      const ProcessInfo& child = *it->second;
      if (!seen.emplace(child.pid, true).second) continue;
      frontier.push_back(child.pid);
      if (IsRunning(child)) out.push_back(child);
    }
  }
  return out;
}

bool ProcessTable::JobAlive(const JobIdentity& job) const {
  if (IsAlive(job.leader)) return true;
  // Exited processes leave the cgroup at once (zombies too), so an empty one
  // means the job is over; the checks below still run, as a cgroup that
  // cannot be read from here (another mount namespace) tells nothing.
  if (job.cgroup && IsCgroupOf(*job.cgroup, job.leader) &&
      CgroupPopulated(*job.cgroup).value_or(false)) {
    return true;
  }
  for (const ProcessRef& p : job.processes) {
    if (IsAlive(p)) return true;
  }
  const bool wrapper_alive = job.wrapper && IsAlive(*job.wrapper);
  for (const ProcessInfo& p : ListBasic()) {
    if (!IsRunning(p) || p.start_ticks < job.leader.start_ticks) continue;
    if (p.pgid == job.leader.pid) return true;
    if (wrapper_alive && p.ppid == job.wrapper->pid) return true;
  }
  return false;
}

}  // namespace canhazgpu::host
