#include "host/linux_process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "core/strings.h"
#include "host/job_cgroup.h"

namespace canhazgpu::host {
namespace {

// Reads a whole (small) procfs file with plain syscalls: liveness checks
// run this for every waiter on every poll, and iostreams cost 3x as much.
bool ReadFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// The first number on the "Uid:" line of /proc/<pid>/status is the real uid.
bool ParseRealUid(std::string_view status, uint32_t* uid) {
  for (std::string_view line : Split(status, '\n')) {
    if (!line.starts_with("Uid:")) continue;
    line = Trim(line.substr(4));
    return ParseInt(line.substr(0, line.find_first_of(" \t")), uid);
  }
  return false;
}

}  // namespace

bool ParseProcStat(std::string_view text, ProcessInfo* info) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return false;
  }
  if (!ParseInt(Trim(text.substr(0, open)), &info->pid)) return false;
  // Fields after the command: state(3) ppid(4) ... starttime(22).
  std::vector<std::string_view> rest = Split(Trim(text.substr(close + 1)), ' ', true);
  constexpr size_t kStartTimeField = 22 - 3;
  if (rest.size() <= kStartTimeField || rest[0].size() != 1) return false;
  info->state = rest[0][0];
  return ParseInt(rest[1], &info->ppid) && ParseInt(rest[2], &info->pgid) &&
         ParseInt(rest[kStartTimeField], &info->start_ticks);
}

std::optional<ProcessInfo> LinuxProcessTable::FindBasic(int64_t pid) const {
  if (pid <= 0) return std::nullopt;
  std::string stat;
  ProcessInfo info;
  if (!ReadFile(StrCat(proc_root_, "/", pid, "/stat"), &stat) || !ParseProcStat(stat, &info)) {
    return std::nullopt;
  }
  return info;
}

std::optional<ProcessInfo> LinuxProcessTable::Find(int64_t pid) const {
  if (pid <= 0) return std::nullopt;
  std::string dir = StrCat(proc_root_, "/", pid);
  std::string stat, status, cmdline;
  ProcessInfo info;
  if (!ReadFile(dir + "/stat", &stat) || !ParseProcStat(stat, &info)) return std::nullopt;
  if (!ReadFile(dir + "/status", &status) || !ParseRealUid(status, &info.uid)) {
    return std::nullopt;
  }
  // cmdline is unreadable for some kernel threads and empty for zombies.
  if (ReadFile(dir + "/cmdline", &cmdline)) {
    if (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    if (!cmdline.empty()) {
      for (std::string_view arg : Split(cmdline, '\0')) info.argv.emplace_back(arg);
    }
  }
  return info;
}

std::vector<ProcessInfo> LinuxProcessTable::ListBasic() const {
  std::vector<ProcessInfo> all;
  DIR* dir = opendir(proc_root_.c_str());
  if (dir == nullptr) return all;
  std::string stat;
  while (struct dirent* entry = readdir(dir)) {
    int64_t pid;
    if (!ParseInt(entry->d_name, &pid)) continue;
    ProcessInfo info;
    // A process may exit between readdir and the read: it is simply absent.
    if (ReadFile(StrCat(proc_root_, "/", pid, "/stat"), &stat) && ParseProcStat(stat, &info)) {
      all.push_back(std::move(info));
    }
  }
  closedir(dir);
  return all;
}

std::vector<ProcessInfo> LinuxProcessTable::GroupMembers(int64_t pgid) const {
  std::vector<ProcessInfo> members;
  for (ProcessInfo& p : ListBasic()) {
    if (p.pgid == pgid) members.push_back(std::move(p));
  }
  return members;
}

std::optional<bool> LinuxProcessTable::CgroupPopulated(const std::string& dir) const {
  return ReadCgroupPopulated(dir);
}

std::string LinuxProcessTable::UserName(uint32_t uid) const {
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &result) == 0 && result != nullptr) {
    return result->pw_name;
  }
  return StrCat(uid);
}

}  // namespace canhazgpu::host
