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
  int64_t pgid = 0;  // process group
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

  // Like Find() with only pid, ppid, pgid, state and start time filled in;
  // cheaper where the table can tell those alone (liveness checks).
  virtual std::optional<ProcessInfo> FindBasic(int64_t pid) const { return Find(pid); }

  // Members of process group `pgid`, with pid, ppid, pgid, state and start
  // time filled in (not uid or argv). Scans the whole table: for rare paths.
  virtual std::vector<ProcessInfo> GroupMembers(int64_t pgid) const = 0;

  // The login name of `uid`, or its number as text when it has none.
  virtual std::string UserName(uint32_t uid) const = 0;

  // True while the very process `ref` names runs: same pid, same start time,
  // and not a zombie. Pid reuse and unreaped zombies both read as dead.
  bool IsAlive(const ProcessRef& ref) const;

  // True while the job `leader` started runs: the leader itself, or any live
  // member of its process group (pgid == leader pid) started no earlier than
  // it, such as workers that outlived the command. A pgid number is not
  // reused while its group has members, so this cannot mistake another job
  // for this one.
  bool JobAlive(const ProcessRef& leader) const;
};

}  // namespace canhazgpu::host
