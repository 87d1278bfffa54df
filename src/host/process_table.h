// The process-table seam: what the tool needs to know about other processes
// (owner, command line, parent, start time) without reading /proc itself.
// LinuxProcessTable reads /proc; testing/FakeProcessTable is a map of pids.
// Implementations are read-only and safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/reservation.h"

namespace canhazgpu::host {

struct ProcessInfo {
  int64_t pid = 0;
  int64_t ppid = 0;
  uint32_t uid = 0;  // real uid: who started it, whatever $USER says
  uint64_t start_ticks = 0;
  char state = 'R';  // 'Z' zombie, 'X' dead, as in /proc/<pid>/stat
  std::vector<std::string> argv;
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;

  // The process, or nullopt when no such pid exists (or it cannot be read).
  virtual std::optional<ProcessInfo> Find(int64_t pid) const = 0;

  // The login name of `uid`, or its number as text when it has none.
  virtual std::string UserName(uint32_t uid) const = 0;

  // True while the very process `ref` names runs: same pid, same start time,
  // and not a zombie. Pid reuse and unreaped zombies both read as dead.
  bool IsAlive(const ProcessRef& ref) const;
};

}  // namespace canhazgpu::host
