// A ProcessTable that is a map of pids, for unit tests. Not thread-safe.
#pragma once

#include <map>

#include "core/strings.h"
#include "host/process_table.h"

namespace canhazgpu::host {

class FakeProcessTable : public ProcessTable {
 public:
  void Add(ProcessInfo info) { processes_[info.pid] = std::move(info); }
  void Remove(int64_t pid) { processes_.erase(pid); }
  void AddUser(uint32_t uid, std::string name) { users_[uid] = std::move(name); }
  // Whether the cgroup at `dir` has a process; unset cgroups cannot be read.
  void SetCgroup(const std::string& dir, bool populated) { cgroups_[dir] = populated; }

  std::optional<ProcessInfo> Find(int64_t pid) const override {
    auto it = processes_.find(pid);
    if (it == processes_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<ProcessInfo> GroupMembers(int64_t pgid) const override {
    std::vector<ProcessInfo> out;
    for (const auto& [pid, info] : processes_) {
      if (info.pgid == pgid) out.push_back(info);
    }
    return out;
  }
  std::vector<ProcessInfo> ListBasic() const override {
    std::vector<ProcessInfo> out;
    for (const auto& [pid, info] : processes_) out.push_back(info);
    return out;
  }
  std::optional<bool> CgroupPopulated(const std::string& dir) const override {
    auto it = cgroups_.find(dir);
    if (it == cgroups_.end()) return std::nullopt;
    return it->second;
  }
  std::string UserName(uint32_t uid) const override {
    auto it = users_.find(uid);
    return it == users_.end() ? StrCat(uid) : it->second;
  }

 private:
  std::map<int64_t, ProcessInfo> processes_;
  std::map<uint32_t, std::string> users_;
  std::map<std::string, bool> cgroups_;
};

}  // namespace canhazgpu::host
