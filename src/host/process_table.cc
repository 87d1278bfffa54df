#include "host/process_table.h"

namespace canhazgpu::host {

bool ProcessTable::IsAlive(const ProcessRef& ref) const {
  std::optional<ProcessInfo> info = Find(ref.pid);
  return info.has_value() && info->start_ticks == ref.start_ticks && info->state != 'Z' &&
         info->state != 'X';
}

}  // namespace canhazgpu::host
