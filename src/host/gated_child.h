// Runs a user's command for `canhazgpu run` in a way that lets the caller
// record the job's identity (pid + start time) in the state store *before*
// the command starts:
//
//   1. Fork() creates the child, which waits at a gate (a pipe) without
//      executing anything;
//   2. the caller reserves GPUs naming child.pid();
//   3. Start(env) opens the gate: the child applies the environment edits and
//      execs, and Start() reports whether exec succeeded; or Abort() makes
//      the child exit without running anything;
//   4. Wait() blocks until the job is over, enforcing an optional timeout.
//
// The job is the command and everything it starts. The child leads its own
// process group, and the wrapper is a child subreaper, so processes the
// command leaves behind (workers that outlive it, daemons that called
// setsid()) are re-parented to the wrapper: the job is over when the wrapper
// has no children left. While waiting, the wrapper rescans its descendants
// and reports those outside the job's group, so they can be recorded with
// the reservation and outlive a SIGKILLed wrapper (docs/jobs.md); signals
// it passes on, and the timeout's, reach them too.
//
// Where the host offers a cgroup v2 (JobCgroup), EnterCgroup() puts the
// child in a cgroup of its own before it is released: everything the job
// starts is then in that cgroup, which any later command can read, and the
// signals reach every process in it (the last one through cgroup.kill). The
// cgroup is removed once the job is over.
//
// When the wrapper is in the foreground of a terminal, the job's group is
// made the foreground group for the job's lifetime, as a shell does: the
// command reads the terminal, and Ctrl-C / Ctrl-\ reach it and not the
// wrapper. Ctrl-Z stops the job and then the wrapper, so the shell's job
// control works. Signals sent to the wrapper itself (INT, QUIT, TERM, HUP)
// are passed on to the job's group; the wrapper never dies of them, nor of
// SIGPIPE. Not thread-safe; one GatedChild per process at a time, because it
// changes the process's signal mask.
#pragma once

#include <signal.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"
#include "core/reservation.h"
#include "host/job_cgroup.h"
#include "host/linux_process_table.h"

namespace canhazgpu::host {

struct EnvEdit {
  std::string name;
  std::optional<std::string> value;  // nullopt: unset
};

struct TimeoutPolicy {
  std::optional<Duration> timeout;  // none: wait forever
  // After the timeout: SIGINT, SIGTERM at grace/2, SIGKILL at grace.
  Duration grace = std::chrono::seconds(30);
  // How often the wrapper looks for the job's processes outside its group.
  Duration rescan = std::chrono::seconds(1);
};

class GatedChild {
 public:
  GatedChild(const GatedChild&) = delete;
  GatedChild& operator=(const GatedChild&) = delete;
  GatedChild(GatedChild&& other) noexcept;
  ~GatedChild();

  // Forks the child; `argv[0]` is looked up in PATH at Start().
  static absl::StatusOr<GatedChild> Fork(std::vector<std::string> argv);

  int64_t pid() const { return pid_; }

  // Moves the waiting child into a new cgroup named after it
  // (JobCgroupName of its pid and `start_ticks`) below this process's own
  // cgroup v2; returns the cgroup's directory. Call before Start(). An error
  // (no cgroup v2, no permission) leaves the job followed as before.
  absl::StatusOr<std::string> EnterCgroup(uint64_t start_ticks);

  // The same below the cgroup v2 directory `parent` instead (the admin's
  // dmem parent of `run --gpu-mem`, docs/sharing.md): the caller must be
  // allowed to move its child there. Errors as JobCgroup::Create's.
  absl::StatusOr<std::string> EnterCgroupIn(const std::string& parent, uint64_t start_ticks);

  // Opens the gate. On exec failure returns NotFound (the command does not
  // exist: exit 127) or PermissionDenied (not executable: exit 126), with the
  // child already reaped.
  absl::Status Start(const std::vector<EnvEdit>& env);

  // Makes the waiting child exit without running the command, and reaps it.
  void Abort();

  struct Callbacks {
    // Once, when the timeout fires, before the first signal is sent.
    std::function<void()> on_timeout;
    // Once, when the command exits while other processes of the job remain;
    // gets the command's exit status.
    std::function<void(int)> on_command_exit;
    // When the job's live processes outside its own process group (pid and
    // start time, ascending by pid) differ from the last report.
    std::function<void(const std::vector<ProcessRef>&)> on_job_processes;
  };

  // Waits until the command and every process it left behind have exited;
  // returns the command's exit status the way a shell reports it (128 + N
  // when killed by signal N). After the timeout: SIGINT to the job's group
  // and every other descendant, SIGTERM, then SIGKILL (see TimeoutPolicy).
  absl::StatusOr<int> Wait(const TimeoutPolicy& policy, const Callbacks& callbacks = {});

  // After Wait(): whether the timeout fired, i.e. the job was stopped by it
  // rather than ending on its own (`canhazgpu run` then exits 124, as
  // timeout(1) does).
  bool timed_out() const { return timed_out_; }

 private:
  GatedChild() = default;
  void CloseFds();
  void RestoreSignals();
  void GiveTerminalBack();
  // Sends `sig` to the job's group, to every descendant of the wrapper and
  // to every process in the job's cgroup, once each (SIGKILL: cgroup.kill).
  void SignalJob(int sig) const;
  // Deletes the job's cgroup, if any, once nothing of the job is left.
  void RemoveCgroup();
  // The job's live processes outside its group, ascending by pid.
  std::vector<ProcessRef> ProcessesOutsideGroup() const;
  // Reaps whatever changed without blocking: the command (its status into
  // `*command_status`), or orphans re-parented to the wrapper. Follows a
  // stopped command. False when nothing of the job is left.
  bool ReapChildren(const Callbacks& callbacks, std::optional<int>* command_status);
  // Ctrl-Z: stops the wrapper too, so the shell sees the job stopped; when
  // continued (fg/bg), continues the job.
  void StopWithJob();

  int64_t pid_ = -1;
  int gate_fd_ = -1;   // write end: the child execs after reading it to EOF
  int error_fd_ = -1;  // read end: errno from a failed exec, EOF on success
  sigset_t old_mask_;
  bool mask_changed_ = false;
  bool reaped_ = false;
  bool timed_out_ = false;
  int tty_fd_ = -1;  // the terminal whose foreground group is the job's
  LinuxProcessTable processes_;
  std::optional<JobCgroup> cgroup_;
};

}  // namespace canhazgpu::host
