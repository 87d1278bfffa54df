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
//   4. Wait() blocks until the command exits, enforcing an optional timeout.
//
// The child stays in the caller's process group and session, so it owns the
// terminal like a directly started program: Ctrl-C and Ctrl-\ from the TTY
// reach it; the wrapper ignores them (as system() and shells do) and
// forwards SIGTERM. Not thread-safe; one GatedChild per process at a time,
// because it changes the process's signal mask.
#pragma once

#include <signal.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/clock.h"

namespace canhazgpu::host {

struct EnvEdit {
  std::string name;
  std::optional<std::string> value;  // nullopt: unset
};

struct TimeoutPolicy {
  std::optional<Duration> timeout;  // none: wait forever
  // After the timeout: SIGINT, SIGTERM at grace/2, SIGKILL at grace.
  Duration grace = std::chrono::seconds(30);
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

  // Opens the gate. On exec failure returns NotFound (the command does not
  // exist: exit 127) or PermissionDenied (not executable: exit 126), with the
  // child already reaped.
  absl::Status Start(const std::vector<EnvEdit>& env);

  // Makes the waiting child exit without running the command, and reaps it.
  void Abort();

  // Waits for the command to end; returns its exit status the way a shell
  // reports it (128 + N when killed by signal N). `on_timeout` is called
  // once when the timeout fires, before the first signal is sent.
  absl::StatusOr<int> Wait(const TimeoutPolicy& policy, void (*on_timeout)() = nullptr);

 private:
  GatedChild() = default;
  void CloseFds();
  void RestoreSignals();

  int64_t pid_ = -1;
  int gate_fd_ = -1;   // write end: the child execs after reading it to EOF
  int error_fd_ = -1;  // read end: errno from a failed exec, EOF on success
  sigset_t old_mask_;
  bool mask_changed_ = false;
  bool reaped_ = false;
};

}  // namespace canhazgpu::host
