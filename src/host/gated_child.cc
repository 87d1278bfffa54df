#include "host/gated_child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/status_macros.h"
#include "core/strings.h"
#include "host/signals.h"

namespace canhazgpu::host {
namespace {

// Signals the wrapper takes through a signalfd while the job runs. Those
// the user made it ignore (nohup's SIGHUP) stay ignored: a blocked signal is
// delivered to a signalfd even when its action is SIG_IGN.
sigset_t WrapperSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) {
    if (!IsIgnored(sig)) sigaddset(&set, sig);
  }
  return set;
}

// The terminal this process is in the foreground of, or -1.
int ForegroundTerminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (isatty(fd) && tcgetpgrp(fd) == getpgrp()) return fd;
  }
  return -1;
}

// tcsetpgrp from a background group raises SIGTTOU unless it is blocked.
void SetForeground(int tty_fd, pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(tty_fd, pgid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Runs in the child: waits at the gate, applies the environment edits and
// execs. Never returns. Only the child's own memory is touched, and the
// parent is single-threaded, so allocating here is safe.
[[noreturn]] void ChildMain(const std::vector<std::string>& argv, int gate_fd, int error_fd,
                            const sigset_t& old_mask) {
  setpgid(0, 0);  // the job's own group; the parent does the same, whoever runs first
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  RestoreInheritedSigpipe();
  std::string gate;
  char buf[4096];
  for (;;) {
    ssize_t n = read(gate_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    gate.append(buf, static_cast<size_t>(n));
  }
  // No "S" means Abort() or a dead parent: leave without running anything.
  if (gate.empty() || gate[0] != 'S') _exit(0);
  size_t pos = 1;
  while (pos < gate.size()) {
    size_t end = gate.find('\0', pos);
    if (end == std::string::npos) end = gate.size();
    std::string entry = gate.substr(pos, end - pos);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      unsetenv(entry.c_str());
    } else {
      setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
    }
    pos = end + 1;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  int err = errno;
  ssize_t ignored = write(error_fd, &err, sizeof(err));
  (void)ignored;
  _exit(err == ENOENT ? 127 : 126);
}

int ExitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

GatedChild::GatedChild(GatedChild&& other) noexcept
    : pid_(other.pid_),
      gate_fd_(other.gate_fd_),
      error_fd_(other.error_fd_),
      old_mask_(other.old_mask_),
      mask_changed_(other.mask_changed_),
      reaped_(other.reaped_),
      timed_out_(other.timed_out_),
      tty_fd_(other.tty_fd_),
      cgroup_(std::move(other.cgroup_)) {
  other.cgroup_.reset();
  other.tty_fd_ = -1;
  other.pid_ = -1;
  other.gate_fd_ = other.error_fd_ = -1;
  other.mask_changed_ = false;
  other.reaped_ = true;
}

GatedChild::~GatedChild() {
  if (pid_ > 0 && !reaped_) Abort();
  RemoveCgroup();
  GiveTerminalBack();
  CloseFds();
  RestoreSignals();
}

void GatedChild::GiveTerminalBack() {
  if (tty_fd_ >= 0) SetForeground(tty_fd_, getpgrp());
  tty_fd_ = -1;
}

void GatedChild::CloseFds() {
  if (gate_fd_ >= 0) close(gate_fd_);
  if (error_fd_ >= 0) close(error_fd_);
  gate_fd_ = error_fd_ = -1;
}

void GatedChild::RestoreSignals() {
  if (mask_changed_) sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  mask_changed_ = false;
}

absl::StatusOr<GatedChild> GatedChild::Fork(std::vector<std::string> argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no command to run");
  int gate[2], error[2];
  if (pipe2(gate, O_CLOEXEC) != 0)
    return absl::InternalError("pipe: " + std::string(strerror(errno)));
  if (pipe2(error, O_CLOEXEC) != 0) {
    close(gate[0]);
    close(gate[1]);
    return absl::InternalError("pipe: " + std::string(strerror(errno)));
  }
  GatedChild child;
  // Block the wrapper's signals before forking so none is lost between the
  // fork and Wait(); the child restores the original mask.
  sigset_t block = WrapperSignals();
  sigprocmask(SIG_BLOCK, &block, &child.old_mask_);
  child.mask_changed_ = true;
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {gate[0], gate[1], error[0], error[1]}) close(fd);
    return absl::InternalError(StrCat("fork: ", strerror(err)));
  }
  if (pid == 0) {
    close(gate[1]);
    close(error[0]);
    ChildMain(argv, gate[0], error[1], child.old_mask_);
  }
  close(gate[0]);
  close(error[1]);
  setpgid(pid, pid);
  // Orphans of the job become our children, so we can tell when it is over.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  child.pid_ = pid;
  child.gate_fd_ = gate[1];
  child.error_fd_ = error[0];
  // A wrapper whose stdout or stderr reader went away must not die of
  // SIGPIPE while it still has GPUs to release.
  IgnoreBrokenPipes();
  return child;
}

absl::StatusOr<std::string> GatedChild::EnterCgroup(uint64_t start_ticks) {
  ASSIGN_OR_RETURN(std::string parent, OwnCgroupDirectory());
  return EnterCgroupIn(parent, start_ticks);
}

absl::StatusOr<std::string> GatedChild::EnterCgroupIn(const std::string& parent,
                                                      uint64_t start_ticks) {
  ASSIGN_OR_RETURN(JobCgroup cgroup, JobCgroup::Create(parent, {pid_, start_ticks}, processes_));
  cgroup_ = std::move(cgroup);
  return cgroup_->dir();
}

void GatedChild::RemoveCgroup() {
  // A cgroup that still has a process cannot be removed: it stays, and the
  // next JobCgroup::Create() in the same parent removes it once empty.
  if (cgroup_) cgroup_->Remove();
  cgroup_.reset();
}

absl::Status GatedChild::Start(const std::vector<EnvEdit>& env) {
  // Hand the terminal to the job before it runs, as a shell does.
  tty_fd_ = ForegroundTerminal();
  if (tty_fd_ >= 0) SetForeground(tty_fd_, static_cast<pid_t>(pid_));
  std::string gate = "S";
  for (const EnvEdit& e : env) {
    gate += e.value.has_value() ? e.name + "=" + *e.value : e.name;
    gate.push_back('\0');
  }
  WriteAll(gate_fd_, gate);
  close(gate_fd_);
  gate_fd_ = -1;
  int err = 0;
  ssize_t n;
  do {
    n = read(error_fd_, &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  if (n != sizeof(err)) return absl::OkStatus();  // EOF: exec succeeded
  int status = 0;
  waitpid(static_cast<pid_t>(pid_), &status, 0);
  reaped_ = true;
  RemoveCgroup();
  GiveTerminalBack();
  if (err == ENOENT) return absl::NotFoundError(strerror(err));
  return absl::PermissionDeniedError(strerror(err));
}

void GatedChild::Abort() {
  if (gate_fd_ >= 0) {
    close(gate_fd_);
    gate_fd_ = -1;
  }
  int status = 0;
  while (waitpid(static_cast<pid_t>(pid_), &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  RemoveCgroup();
}

void GatedChild::SignalJob(int sig) const {
  // cgroup.kill reaches every process of the job at once, also one forked
  // while a scan would read the cgroup. The group and the descendants are
  // still signalled: a process of the job that moved itself to another
  // cgroup (it needs write access there) is still our descendant.
  const bool cgroup_killed = sig == SIGKILL && cgroup_ && cgroup_->Kill();
  kill(-static_cast<pid_t>(pid_), sig);
  // Processes that left the group are still our descendants (we are their
  // subreaper). A descendant cannot be reaped - and its pid reused - by
  // anyone but its parent, itself part of the job, so the window between
  // this scan and the kill is the job's own.
  std::set<int64_t> signalled;
  for (const ProcessInfo& p : processes_.Descendants(getpid())) {
    if (p.pgid != pid_) {
      kill(static_cast<pid_t>(p.pid), sig);
      signalled.insert(p.pid);
    }
  }
  if (!cgroup_ || cgroup_killed) return;
  // Each process gets the signal once: a second SIGINT makes many programs
  // (Python among them) stop cleaning up and die at once.
  for (int64_t pid : cgroup_->Processes()) {
    if (signalled.contains(pid)) continue;
    std::optional<ProcessInfo> p = processes_.FindBasic(pid);
    if (p && p->pgid == pid_) continue;  // reached through the group
    kill(static_cast<pid_t>(pid), sig);
  }
}

std::vector<ProcessRef> GatedChild::ProcessesOutsideGroup() const {
  std::vector<ProcessRef> out;
  for (const ProcessInfo& p : processes_.Descendants(getpid())) {
    if (p.pgid != pid_) out.push_back({p.pid, p.start_ticks});
  }
  std::sort(out.begin(), out.end(),
            [](const ProcessRef& a, const ProcessRef& b) { return a.pid < b.pid; });
  return out;
}

bool GatedChild::ReapChildren(const Callbacks& callbacks, std::optional<int>* command_status) {
  const pid_t job = static_cast<pid_t>(pid_);
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return false;  // ECHILD: nothing of the job is left
    if (pid == 0) return true;
    if (pid != job) continue;  // an orphan of the job ended
    if (WIFSTOPPED(status)) {
      StopWithJob();
      continue;
    }
    *command_status = ExitStatusOf(status);
    reaped_ = true;
    // Is anything of the job left? (A non-blocking probe: ECHILD if not.)
    siginfo_t probe{};
    if (waitid(P_ALL, 0, &probe, WEXITED | WNOHANG | WNOWAIT) == 0 && callbacks.on_command_exit) {
      callbacks.on_command_exit(**command_status);
    }
  }
}

void GatedChild::StopWithJob() {
  const pid_t job = static_cast<pid_t>(pid_);
  bool had_terminal = tty_fd_ >= 0;
  int tty = tty_fd_;
  GiveTerminalBack();
  kill(getpid(), SIGSTOP);
  if (had_terminal && tcgetpgrp(tty) == getpgrp()) {
    tty_fd_ = tty;
    SetForeground(tty_fd_, job);
  }
  kill(-job, SIGCONT);
}

absl::StatusOr<int> GatedChild::Wait(const TimeoutPolicy& policy, const Callbacks& callbacks) {
  sigset_t signals = WrapperSignals();
  int sigfd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) return absl::InternalError(StrCat("signalfd: ", strerror(errno)));
  using SteadyClock = std::chrono::steady_clock;
  // The next timeout stage; never, without a timeout or after SIGKILL.
  constexpr SteadyClock::time_point kNever = SteadyClock::time_point::max();
  SteadyClock::time_point deadline = kNever;
  if (policy.timeout) deadline = SteadyClock::now() + *policy.timeout;
  SteadyClock::time_point next_scan = SteadyClock::now();
  std::vector<ProcessRef> reported;
  int stage = 0;  // 0 running, 1 SIGINT sent, 2 SIGTERM sent, 3 SIGKILL sent
  std::optional<int> command_status;
  while (ReapChildren(callbacks, &command_status)) {
    if (SteadyClock::now() >= next_scan) {
      // Processes that left the group are found here, the only record of
      // them that outlives this wrapper (a SIGKILL) - see docs/jobs.md.
      std::vector<ProcessRef> current = ProcessesOutsideGroup();
      if (current != reported && callbacks.on_job_processes) callbacks.on_job_processes(current);
      reported = std::move(current);
      next_scan = SteadyClock::now() + policy.rescan;
    }
    SteadyClock::time_point wake = std::min(next_scan, deadline);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - SteadyClock::now());
    int wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    struct pollfd fds[1] = {{sigfd, POLLIN, 0}};
    int ready = poll(fds, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      struct signalfd_siginfo info;
      while (read(sigfd, &info, sizeof(info)) == sizeof(info)) {
        // Signals aimed at the wrapper are meant for the job. (From the
        // terminal they reach the job's group directly, not us.)
        if (info.ssi_signo != SIGCHLD) SignalJob(static_cast<int>(info.ssi_signo));
      }
    }
    if (deadline != kNever && SteadyClock::now() >= deadline) {
      auto half_grace = policy.grace / 2;
      if (stage == 0) {
        timed_out_ = true;
        if (callbacks.on_timeout) callbacks.on_timeout();
        SignalJob(SIGINT);
        deadline = SteadyClock::now() + half_grace;
      } else if (stage == 1) {
        SignalJob(SIGTERM);
        deadline = SteadyClock::now() + (policy.grace - half_grace);
      } else {
        SignalJob(SIGKILL);
        deadline = kNever;
      }
      ++stage;
    }
  }
  reaped_ = true;
  close(sigfd);
  RemoveCgroup();
  GiveTerminalBack();
  CloseFds();
  RestoreSignals();
  return command_status.value_or(1);
}

}  // namespace canhazgpu::host
