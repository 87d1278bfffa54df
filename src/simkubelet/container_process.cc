#include "simkubelet/container_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/clock.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::simkubelet {
namespace {

// Once the main process is gone, how long its output may still trickle in
// (from a descendant that left the group) before the pipes are abandoned.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};

// The runtime's (runc's) words for a command that cannot be executed.
std::string ExecError(const std::string& command, int err) {
  if (err == ENOENT && command.find('/') == std::string::npos) {
    return StrCat("exec: \"", command, "\": executable file not found in $PATH");
  }
  if (err == ENOENT) {
    return StrCat("exec: \"", command, "\": stat ", command, ": no such file or directory");
  }
  return StrCat("exec: \"", command, "\": ", std::strerror(err));
}

class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
};

struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

// The child's stdin, stdout and stderr: a new pseudo-terminal (in a new
// session), or pipes in a new process group; `out`, `err` and `in` get this
// side's ends.
absl::Status ConnectStdio(const ProcessSpec& spec, SpawnSetup* setup, Pipe* out, Pipe* err,
                          Pipe* in, short* flags) {
  std::array<int, 2> fds;
  if (spec.tty) {
    // The terminal's master side is both its output and its input.
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
      if (master >= 0) ::close(master);
      return absl::InternalError(StrCat("no pseudo-terminal: ", std::strerror(errno)));
    }
    std::array<char, 128> name;
    if (::ptsname_r(master, name.data(), name.size()) != 0) {
      ::close(master);
      return absl::InternalError("ptsname failed");
    }
    out->read = master;
    in->write = ::fcntl(master, F_DUPFD_CLOEXEC, 0);
    // In a new session, opening the terminal makes it the controlling one.
    posix_spawn_file_actions_addopen(&setup->actions, 0, name.data(), O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&setup->actions, 0, 1);
    posix_spawn_file_actions_adddup2(&setup->actions, 0, 2);
    *flags |= POSIX_SPAWN_SETSID;
  } else {
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
    out->read = fds[0];
    out->write = fds[1];
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
    err->read = fds[0];
    err->write = fds[1];
    if (spec.stdin_pipe) {
      if (::pipe2(fds.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
      in->read = fds[0];
      in->write = fds[1];
      posix_spawn_file_actions_adddup2(&setup->actions, in->read, 0);
    } else {
      posix_spawn_file_actions_addopen(&setup->actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&setup->actions, out->write, 1);
    posix_spawn_file_actions_adddup2(&setup->actions, err->write, 2);
    posix_spawnattr_setpgroup(&setup->attr, 0);
    *flags |= POSIX_SPAWN_SETPGROUP;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ContainerProcess>> ContainerProcess::Start(const ProcessSpec& spec,
                                                                          OutputHandler on_output,
                                                                          ExitHandler on_exit) {
  if (spec.argv.empty()) {
    return absl::InvalidArgumentError(
        "no command specified: the simulated kubelet runs no images, so a container needs "
        "`command`");
  }
  Pipe out, err, in;
  SpawnSetup setup;
  // Its own process group (a terminal's session leader leads one too), so
  // that a signal reaches everything it started; default dispositions and
  // no blocked signals, whatever this process has.
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  RETURN_IF_ERROR(ConnectStdio(spec, &setup, &out, &err, &in, &flags));
  posix_spawn_file_actions_addchdir_np(&setup.actions, spec.work_dir.c_str());
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setflags(&setup.attr, flags);

  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc =
      ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), envp.data());
  if (rc != 0) return absl::FailedPreconditionError(ExecError(spec.argv[0], rc));
  const int pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pid_fd < 0) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return absl::InternalError(StrCat("pidfd_open: ", std::strerror(errno)));
  }
  for (int* end : {&out.write, &err.write, &in.read}) {
    if (*end >= 0) ::close(*end);
    *end = -1;
  }

  std::unique_ptr<ContainerProcess> process(new ContainerProcess(std::exchange(in.write, -1)));
  process->pid_ = pid;
  process->raw_output_ = spec.tty;
  process->on_output_ = std::move(on_output);
  process->on_exit_ = std::move(on_exit);
  const int out_fd = std::exchange(out.read, -1);
  const int err_fd = std::exchange(err.read, -1);
  process->thread_ =
      std::thread([p = process.get(), out_fd, err_fd, pid_fd] { p->Run(out_fd, err_fd, pid_fd); });
  return process;
}

ProcessExit ContainerProcess::ReapMainProcess() {
  int status = 0;
  ::waitpid(pid_, &status, 0);
  ProcessExit e;
  if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.exit_code = 128 + e.signal;
  } else {
    e.exit_code = WEXITSTATUS(status);
  }
  {
    MutexLock lock(mu_);
    reaped_ = true;
  }
  // The main process is gone: so is the container, and whatever it left
  // running with it.
  ::kill(-pid_, SIGKILL);
  return e;
}

void ContainerProcess::Run(int out_fd, int err_fd, int pid_fd) {
  struct Stream {
    int fd;
    std::string_view name;
    std::string partial;
  };
  std::array<Stream, 2> streams = {Stream{out_fd, "stdout", {}}, Stream{err_fd, "stderr", {}}};
  std::optional<ProcessExit> exit;
  std::chrono::steady_clock::time_point drain_until;
  std::array<char, 65536> buffer;
  while (true) {
    std::vector<pollfd> fds;
    for (const Stream& s : streams) {
      if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
    }
    if (!exit.has_value()) fds.push_back({pid_fd, POLLIN, 0});
    if (fds.empty()) break;
    int timeout_ms = -1;
    if (exit.has_value()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          drain_until - RealClock().MonoNow());
      if (left.count() <= 0) break;
      timeout_ms = static_cast<int>(left.count());
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == pid_fd) {
        exit = ReapMainProcess();
        drain_until = RealClock().MonoNow() + kDrainAfterExit;
        continue;
      }
      for (Stream& s : streams) {
        if (s.fd != p.fd) continue;
        const ssize_t n = ::read(s.fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          ::close(s.fd);
          s.fd = -1;
          continue;
        }
        if (raw_output_) {
          on_output_(s.name, std::string_view(buffer.data(), static_cast<size_t>(n)));
          continue;
        }
        s.partial.append(buffer.data(), static_cast<size_t>(n));
        size_t start = 0;
        for (size_t nl = s.partial.find('\n'); nl != std::string::npos;
             nl = s.partial.find('\n', start)) {
          on_output_(s.name, std::string_view(s.partial).substr(start, nl + 1 - start));
          start = nl + 1;
        }
        s.partial.erase(0, start);
      }
    }
  }
  for (Stream& s : streams) {
    if (s.fd >= 0) ::close(s.fd);
    if (!s.partial.empty()) on_output_(s.name, s.partial);
  }
  ::close(pid_fd);
  if (!exit.has_value()) {  // poll failed: reap it the blocking way
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit = ProcessExit{.exit_code = 128 + SIGKILL, .signal = SIGKILL};
    MutexLock lock(mu_);
    reaped_ = true;
  }
  on_exit_(*exit);
  MutexLock lock(mu_);
  exit_ = exit;
  done_cv_.notify_all();
}

bool ContainerProcess::WriteInput(std::string_view data) {
  MutexLock lock(input_mu_);
  // A reader that is gone makes the write fail with EPIPE, not kill this
  // process: SIGPIPE is blocked for the write and a pending one taken back.
  sigset_t pipe_signal, old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  bool ok = input_fd_ >= 0;
  while (ok && !data.empty()) {
    const ssize_t n = ::write(input_fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (errno == EPIPE) {
        const timespec now{0, 0};
        sigtimedwait(&pipe_signal, nullptr, &now);
      }
      ok = false;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

void ContainerProcess::CloseInput() {
  MutexLock lock(input_mu_);
  if (input_fd_ < 0) return;
  if (raw_output_) {
    // A terminal ends its input with ^D; its master stays open for output.
    static constexpr char kEndOfFile = 4;
    (void)!::write(input_fd_, &kEndOfFile, 1);
  }
  ::close(input_fd_);
  input_fd_ = -1;
}

void ContainerProcess::Signal(int signal) {
  MutexLock lock(mu_);
  if (!reaped_) ::kill(-pid_, signal);
}

std::optional<ProcessExit> ContainerProcess::Wait(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  done_cv_.wait_for(lock, timeout,
                    [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exit_.has_value(); });
  return exit_;
}

ContainerProcess::~ContainerProcess() {
  Signal(SIGKILL);
  if (thread_.joinable()) thread_.join();
  CloseInput();
}

}  // namespace canhazgpu::simkubelet
