// A `canhazgpu run` job's own cgroup v2, where the host offers one: a child
// of the caller's cgroup, named after the job's first process
// (canhazgpu-job-<pid>-<start>). The kernel keeps every process the job
// starts in it, whatever the process calls (setsid, double fork, a dead
// parent), so the job is exactly the cgroup's processes: nothing it starts
// can leave without write access to another cgroup's cgroup.procs.
//
// The host offers a cgroup when the caller may create a directory in its own
// cgroup v2 directory and write the new cgroup's cgroup.procs (root, or a
// user given a delegated subtree). Anything else - cgroup v1 only, no
// permission, a read-only mount - makes Create() fail, and the caller
// follows the job without one (docs/jobs.md).
//
// A JobCgroup owns its directory: Remove() deletes it once empty. Wrappers
// that die without removing theirs leave an empty directory behind; the next
// Create() in the same parent removes those of jobs whose first process has
// exited. Reading and signalling are safe from any thread; Create() and
// Remove() are not meant to race with each other on one object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/reservation.h"
#include "host/process_table.h"

namespace canhazgpu::host {

// A cgroup2 mount as /proc/<pid>/mountinfo shows it: the cgroup at its root
// (not "/" inside a container given a subtree) and where it is mounted.
struct Cgroup2Mount {
  std::string root;
  std::string mount_point;
};

// The first cgroup2 mount in the text of /proc/<pid>/mountinfo, with the
// octal escapes of its paths (\040 for a space) decoded; nullopt when there
// is none (a cgroup v1 host).
std::optional<Cgroup2Mount> ParseCgroup2Mount(std::string_view mountinfo);

// The cgroup v2 path (the "0::/path" line) in the text of /proc/<pid>/cgroup;
// nullopt when there is none.
std::optional<std::string> ParseCgroup2Path(std::string_view proc_cgroup);

// The directory of cgroup `path` under `mount`; nullopt when `path` is not
// below the mount's root (the mount shows another part of the hierarchy).
std::optional<std::string> CgroupDirectory(const Cgroup2Mount& mount, std::string_view path);

// The caller's own cgroup v2 directory, found through
// `proc_root`/self/{mountinfo,cgroup}. NotFound on a host without cgroup v2.
absl::StatusOr<std::string> OwnCgroupDirectory(const std::string& proc_root = "/proc");

// "canhazgpu-job-<pid>-<start>" for the job whose first process is `leader`,
// and back (nullopt for any other name).
std::string JobCgroupName(const ProcessRef& leader);
std::optional<ProcessRef> ParseJobCgroupName(std::string_view name);

class JobCgroup {
 public:
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;
  JobCgroup(JobCgroup&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }
  JobCgroup& operator=(JobCgroup&& other) noexcept;
  ~JobCgroup() { Remove(); }

  // Creates the cgroup JobCgroupName(leader) in `parent` (a cgroup v2
  // directory) and moves process `leader.pid` into it. Fails, leaving
  // nothing behind, where the host offers no such cgroup (PermissionDenied,
  // NotFound, FailedPrecondition...). First removes the empty cgroups that
  // wrappers which died left in `parent` (see the file comment), judged by
  // `processes`.
  static absl::StatusOr<JobCgroup> Create(const std::string& parent, const ProcessRef& leader,
                                          const ProcessTable& processes);

  // The cgroup's directory, e.g. /sys/fs/cgroup/canhazgpu-job-41-7731.
  const std::string& dir() const { return dir_; }

  // The pids in the cgroup and in the cgroups below it (a nested `run`),
  // ascending. Exited processes (zombies too) are not listed.
  std::vector<int64_t> Processes() const;

  // Writes 1 to cgroup.kill: SIGKILL to every process of the cgroup and its
  // children at once, forks in progress included. False where the kernel
  // has no cgroup.kill (before 5.14).
  bool Kill() const;

  // Deletes the directory; only an empty cgroup can be deleted. True when it
  // is gone (or was never there).
  bool Remove();

 private:
  explicit JobCgroup(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;  // empty: removed, or moved from
};

// True while the cgroup at `dir`, or one below it, has a process (the
// "populated" key of cgroup.events, else a non-empty cgroup.procs); nullopt
// when neither can be read (no such cgroup, as seen from here).
std::optional<bool> ReadCgroupPopulated(const std::string& dir);

}  // namespace canhazgpu::host
