#include "host/process_table.h"

namespace canhazgpu::host {

bool ProcessTable::IsAlive(const ProcessRef& ref) const {
  std::optional<ProcessInfo> info = FindBasic(ref.pid);
  return info.has_value() && info->start_ticks == ref.start_ticks && info->state != 'Z' &&
         info->state != 'X';
}

bool ProcessTable::JobAlive(const ProcessRef& leader) const {
  if (IsAlive(leader)) return true;
  for (const ProcessInfo& p : GroupMembers(leader.pid)) {
    if (p.state != 'Z' && p.state != 'X' && p.start_ticks >= leader.start_ticks) return true;
  }
  return false;
}

}  // namespace canhazgpu::host
