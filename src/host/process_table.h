// The process-table seam: what the tool needs to know about other processes
// (owner, command line, parent, start time, whether a job's cgroup still
// holds any) without reading /proc or /sys itself. LinuxProcessTable reads
// /proc and cgroupfs; testing/FakeProcessTable is a map of pids.
// Implementations are read-only and safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/reservation.h"

namespace canhazgpu::host {

// What names one `run` job: its first process (which leads the job's own
// process group), the `canhazgpu run` wrapper watching it (a child
// subreaper), the processes of the job last seen outside the group, and the
// job's own cgroup v2 directory where the host offered one (JobCgroup).
struct JobIdentity {
  ProcessRef leader;
  std::optional<ProcessRef> wrapper;
  std::vector<ProcessRef> processes;
  std::optional<std::string> cgroup;
};

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

  // Every process, with the fields FindBasic() fills in. Scans the whole
  // table: for rare paths.
  virtual std::vector<ProcessInfo> ListBasic() const = 0;

  // The live (not zombie) descendants of `root`, not `root` itself, found by
  // following parent pids through one ListBasic().
  std::vector<ProcessInfo> Descendants(int64_t root) const;

  // Whether the cgroup v2 at directory `dir`, or one below it, has a
  // process; nullopt when that cannot be told from here (no such cgroup).
  virtual std::optional<bool> CgroupPopulated(const std::string& dir) const = 0;

  // The login name of `uid`, or its number as text when it has none.
  virtual std::string UserName(uint32_t uid) const = 0;

  // True while the very process `ref` names runs: same pid, same start time,
  // and not a zombie. Pid reuse and unreaped zombies both read as dead.
  bool IsAlive(const ProcessRef& ref) const;

  // True while any process of `job` runs: the leader; any process in the
  // job's cgroup, whose directory must be named after the leader
  // (JobCgroupName) - the kernel keeps every process the job starts there,
  // whatever it does; a recorded process
  // (same pid and start time); a live member of the leader's process group
  // started no earlier than it (workers that outlived the command; a pgid is
  // not reused while its group has members); or, while the wrapper runs, a
  // live child of the wrapper started no earlier than the leader. The
  // wrapper is a subreaper, so every orphan of the job - also one that left
  // the group with setsid() - becomes its child. The wrapper alone does not
  // keep the job alive: a stopped wrapper whose job has exited holds nothing.
  bool JobAlive(const JobIdentity& job) const;
};

}  // namespace canhazgpu::host
