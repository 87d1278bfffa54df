// ProcessTable over a procfs mount (normally /proc) and cgroupfs. Each call
// reads the files afresh, so answers are current; nothing is cached.
// Thread-safe.
#pragma once

#include <string>

#include "host/process_table.h"

namespace canhazgpu::host {

class LinuxProcessTable : public ProcessTable {
 public:
  explicit LinuxProcessTable(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

  std::optional<ProcessInfo> Find(int64_t pid) const override;
  std::optional<ProcessInfo> FindBasic(int64_t pid) const override;  // reads only /stat
  std::vector<ProcessInfo> GroupMembers(int64_t pgid) const override;
  std::vector<ProcessInfo> ListBasic() const override;
  std::optional<bool> CgroupPopulated(const std::string& dir) const override;
  std::string UserName(uint32_t uid) const override;

 private:
  std::string proc_root_;
};

// Parses the text of /proc/<pid>/stat into pid, ppid, pgid, state and start
// time.
// The command name may hold spaces and parentheses, so fields are counted
// from the last ')'. Returns false on malformed text.
bool ParseProcStat(std::string_view text, ProcessInfo* info);

}  // namespace canhazgpu::host
