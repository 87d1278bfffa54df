#include "host/job_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/file_read.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::host {
namespace {

constexpr std::string_view kJobPrefix = "canhazgpu-job-";
// cgroup.procs of a large cgroup: 1 MiB is over 100,000 pids.
constexpr size_t kMaxCgroupFile = 1 << 20;
// cgroup.events is two short lines; liveness checks read it often.
constexpr size_t kMaxEventsFile = 4096;
// Nested `run`s each add a level; deeper than this is not ours.
constexpr int kMaxDepth = 16;

// Paths in mountinfo escape space, tab, newline and backslash as \ooo.
std::string DecodeOctalEscapes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      std::string_view digits = text.substr(i + 1, 3);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(
            static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string ErrnoText(int err) { return strerror(err); }

absl::Status Errno(int err, std::string_view what) {
  std::string message = StrCat(what, ": ", ErrnoText(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

// Writes `text` to the cgroup interface file `path` in one write(), as the
// kernel expects.
absl::Status WriteCgroupFile(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, path);
  ssize_t n;
  do {
    n = write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Errno(n < 0 ? err : EIO, path);
  return absl::OkStatus();
}

// The names of the directories in `dir` (child cgroups, in a cgroup).
std::vector<std::string> Subdirectories(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* entry = readdir(d)) {
    std::string_view name = entry->d_name;
    if (entry->d_type == DT_DIR && name != "." && name != "..") out.emplace_back(name);
  }
  closedir(d);
  return out;
}

void CollectProcesses(const std::string& dir, int depth, std::vector<int64_t>* out) {
  absl::StatusOr<std::string> procs =
      ReadRegularFile(dir + "/cgroup.procs", kMaxCgroupFile, "cgroup.procs");
  if (procs.ok()) {
    for (std::string_view line : Split(*procs, '\n', true)) {
      int64_t pid;
      if (ParseInt(Trim(line), &pid)) out->push_back(pid);
    }
  }
  if (depth >= kMaxDepth) return;
  for (const std::string& child : Subdirectories(dir)) {
    CollectProcesses(dir + "/" + child, depth + 1, out);
  }
}

// Removes the cgroups in `parent` of jobs whose first process has exited.
// rmdir fails on a cgroup that still has a process or a child cgroup, so a
// job that lives on in a daemon keeps its cgroup. A job whose first process
// still runs may be between mkdir and the move into its cgroup: it is left
// alone.
void RemoveLeftovers(const std::string& parent, const ProcessTable& processes) {
  for (const std::string& name : Subdirectories(parent)) {
    std::optional<ProcessRef> leader = ParseJobCgroupName(name);
    if (!leader || processes.IsAlive(*leader)) continue;
    rmdir((parent + "/" + name).c_str());  // EBUSY: the job lives on; fine
  }
}

}  // namespace

std::optional<Cgroup2Mount> ParseCgroup2Mount(std::string_view mountinfo) {
  // "36 25 0:31 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw":
  // id, parent, device, root, mount point, options, optional fields, "-",
  // file system type, source, super options.
  for (std::string_view line : Split(mountinfo, '\n', true)) {
    std::vector<std::string_view> fields = Split(line, ' ', true);
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || dash + 1 == fields.end()) continue;
    if (*(dash + 1) != "cgroup2") continue;
    return Cgroup2Mount{DecodeOctalEscapes(fields[3]), DecodeOctalEscapes(fields[4])};
  }
  return std::nullopt;
}

std::optional<std::string> ParseCgroup2Path(std::string_view proc_cgroup) {
  for (std::string_view line : Split(proc_cgroup, '\n', true)) {
    if (line.starts_with("0::/")) return std::string(line.substr(3));
  }
  return std::nullopt;
}

std::optional<std::string> CgroupDirectory(const Cgroup2Mount& mount, std::string_view path) {
  std::string_view root = mount.root;
  if (root.ends_with('/')) root.remove_suffix(1);  // "/" becomes ""
  if (!path.starts_with(root)) return std::nullopt;
  std::string_view rest = path.substr(root.size());
  if (!rest.empty() && rest[0] != '/') return std::nullopt;  // "/a" is not below "/ab"
  std::string dir = mount.mount_point;
  if (dir.ends_with('/') && !rest.empty()) dir.pop_back();
  dir.append(rest);
  if (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  return dir;
}

absl::StatusOr<std::string> OwnCgroupDirectory(const std::string& proc_root) {
  ASSIGN_OR_RETURN(std::string mountinfo,
                   ReadRegularFile(proc_root + "/self/mountinfo", kMaxCgroupFile, "mountinfo"));
  ASSIGN_OR_RETURN(std::string cgroups,
                   ReadRegularFile(proc_root + "/self/cgroup", kMaxCgroupFile, "cgroup list"));
  std::optional<Cgroup2Mount> mount = ParseCgroup2Mount(mountinfo);
  if (!mount) return absl::NotFoundError("no cgroup2 file system mounted");
  std::optional<std::string> path = ParseCgroup2Path(cgroups);
  if (!path) return absl::NotFoundError("this process has no cgroup v2 path");
  std::optional<std::string> dir = CgroupDirectory(*mount, *path);
  if (!dir) {
    return absl::NotFoundError(
        StrCat("cgroup ", *path, " is not below the mount of ", mount->root));
  }
  return *dir;
}

std::string JobCgroupName(const ProcessRef& leader) {
  return StrCat(kJobPrefix, leader.pid, "-", leader.start_ticks);
}

std::optional<ProcessRef> ParseJobCgroupName(std::string_view name) {
  if (!name.starts_with(kJobPrefix)) return std::nullopt;
  std::vector<std::string_view> parts = Split(name.substr(kJobPrefix.size()), '-');
  ProcessRef ref;
  if (parts.size() != 2 || !ParseInt(parts[0], &ref.pid) || !ParseInt(parts[1], &ref.start_ticks) ||
      ref.pid <= 0) {
    return std::nullopt;
  }
  return ref;
}

JobCgroup& JobCgroup::operator=(JobCgroup&& other) noexcept {
  if (this != &other) {
    Remove();
    dir_ = std::move(other.dir_);
    other.dir_.clear();
  }
  return *this;
}

absl::StatusOr<JobCgroup> JobCgroup::Create(const std::string& parent, const ProcessRef& leader,
                                            const ProcessTable& processes) {
  RemoveLeftovers(parent, processes);
  std::string dir = StrCat(parent, parent.ends_with('/') ? "" : "/", JobCgroupName(leader));
  if (mkdir(dir.c_str(), 0755) != 0) return Errno(errno, StrCat("create cgroup ", dir));
  JobCgroup cgroup(dir);  // removes the directory again on any failure below
  // Moving a process needs write access to the cgroup.procs of the source and
  // destination's common ancestor (here: `parent`) too; the kernel checks.
  RETURN_IF_ERROR(WriteCgroupFile(dir + "/cgroup.procs", StrCat(leader.pid)));
  return cgroup;
}

std::vector<int64_t> JobCgroup::Processes() const {
  std::vector<int64_t> out;
  if (dir_.empty()) return out;
  CollectProcesses(dir_, 0, &out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool JobCgroup::Kill() const {
  return !dir_.empty() && WriteCgroupFile(dir_ + "/cgroup.kill", "1").ok();
}

bool JobCgroup::Remove() {
  if (dir_.empty()) return true;
  if (rmdir(dir_.c_str()) != 0 && errno != ENOENT) return false;
  dir_.clear();
  return true;
}

std::optional<bool> ReadCgroupPopulated(const std::string& dir) {
  absl::StatusOr<std::string> events =
      ReadRegularFile(dir + "/cgroup.events", kMaxEventsFile, "cgroup.events");
  if (events.ok()) {
    for (std::string_view line : Split(*events, '\n', true)) {
      if (line.starts_with("populated ")) return Trim(line.substr(10)) != "0";
    }
  }
  absl::StatusOr<std::string> procs =
      ReadRegularFile(dir + "/cgroup.procs", kMaxCgroupFile, "cgroup.procs");
  if (!procs.ok()) return std::nullopt;
  return !Trim(*procs).empty();
}

}  // namespace canhazgpu::host
