#include "simkubelet/container_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <variant>

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

struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

// What the child does between fork and exec, all prepared here: there it
// only makes system calls (other threads may hold any lock at the fork).
struct ChildPlan {
  std::string path;  // the executable
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* work_dir = nullptr;
  std::string tty_name;  // a terminal's slave side: stdin, stdout and stderr
  int stdin_fd = -1;     // without a terminal; -1: /dev/null
  int out_fd = -1;
  int err_fd = -1;
  const SandboxEntry* sandbox = nullptr;
};

// Why the child could not exec, written to the parent through a pipe.
struct ChildFailure {
  int err = 0;
  const char* step = "";  // a literal: the same address in parent and child
};

[[noreturn]] void ChildFailed(int error_fd, const char* step, int err) {
  const ChildFailure failure{err, step};
  (void)!::write(error_fd, &failure, sizeof(failure));
  ::_exit(127);
}

// `fd` as `target` in the child, open across exec.
bool MoveFd(int fd, int target) {
  if (fd == target) return ::fcntl(target, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

[[noreturn]] void RunChild(const ChildPlan& plan, int error_fd) {
  // Default dispositions (the parent blocked every signal around the fork).
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &default_action, nullptr);
  }
  if (!plan.tty_name.empty()) {
    // In a new session, opening the terminal makes it the controlling one.
    if (::setsid() < 0) ChildFailed(error_fd, "setsid", errno);
    const int fd = ::open(plan.tty_name.c_str(), O_RDWR);
    if (fd < 0) ChildFailed(error_fd, "open the terminal", errno);
    if (!MoveFd(fd, 0) || !MoveFd(0, 1) || !MoveFd(0, 2)) ChildFailed(error_fd, "dup2", errno);
    if (fd > 2) ::close(fd);
  } else {
    if (::setpgid(0, 0) != 0) ChildFailed(error_fd, "setpgid", errno);
    const int in = plan.stdin_fd >= 0 ? plan.stdin_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) ChildFailed(error_fd, "open /dev/null", errno);
    if (!MoveFd(in, 0) || !MoveFd(plan.out_fd, 1) || !MoveFd(plan.err_fd, 2)) {
      ChildFailed(error_fd, "dup2", errno);
    }
  }
  const char* step = "";
  if (int err = plan.sandbox->EnterInChild(&step); err != 0) ChildFailed(error_fd, step, err);
  if (::chdir(plan.work_dir) != 0) ChildFailed(error_fd, "chdir", errno);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
  ChildFailed(error_fd, "exec", errno);
}

// `command` as posix_spawnp finds it: a name without '/' in this process's
// PATH. The errno when it is in none of its directories.
std::variant<std::string, int> FindExecutable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* env_path = ::getenv("PATH");
  int err = ENOENT;
  for (std::string_view dir : Split(env_path != nullptr ? env_path : "/bin:/usr/bin", ':')) {
    const std::string candidate = StrCat(dir.empty() ? "." : dir, "/", command);
    struct stat st;
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    err = EACCES;
  }
  return err;
}

// The child's stdin, stdout and stderr: a new pseudo-terminal (in a new
// session), or pipes in a new process group; `out`, `err` and `in` get this
// side's ends, `plan` the child's.
absl::Status ConnectStdio(const ProcessSpec& spec, ChildPlan* plan, Pipe* out, Pipe* err,
                          Pipe* in) {
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
    plan->tty_name = name.data();
    return absl::OkStatus();
  }
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
    plan->stdin_fd = in->read;
  }
  plan->out_fd = out->write;
  plan->err_fd = err->write;
  return absl::OkStatus();
}

// Forks the child of `plan` and waits until it has exec'd: its pid, or the
// runtime's words for why it could not start.
absl::StatusOr<pid_t> SpawnChild(const ProcessSpec& spec, const ChildPlan& plan) {
  Pipe errors;
  std::array<int, 2> fds;
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  errors.read = fds[0];
  errors.write = fds[1];
  // No handler of this process may run in the child before it resets them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(plan, errors.write);
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::close(std::exchange(errors.write, -1));
  if (pid < 0) return absl::InternalError(StrCat("fork: ", std::strerror(fork_errno)));
  ChildFailure failure;
  ssize_t n;
  do {
    n = ::read(errors.read, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(failure))) return pid;  // exec closed the pipe
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  const std::string step = failure.step;
  if (step == "exec") return absl::FailedPreconditionError(ExecError(spec.argv[0], failure.err));
  if (step == "chdir") {
    return absl::FailedPreconditionError(
        StrCat("chdir to cwd (\"", spec.work_dir,
               "\") set in config.json failed: ", std::strerror(failure.err)));
  }
  return absl::FailedPreconditionError(
      StrCat("cannot enter the pod's sandbox: ", step, ": ", std::strerror(failure.err)));
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
  ChildPlan plan;
  std::variant<std::string, int> path = FindExecutable(spec.argv[0]);
  if (const int* err = std::get_if<int>(&path)) {
    return absl::FailedPreconditionError(ExecError(spec.argv[0], *err));
  }
  plan.path = std::get<std::string>(std::move(path));
  Pipe out, err, in;
  RETURN_IF_ERROR(ConnectStdio(spec, &plan, &out, &err, &in));
  for (const std::string& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const std::string& e : spec.env) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);
  plan.work_dir = spec.work_dir.c_str();
  const SandboxEntry sandbox(spec.sandbox);
  plan.sandbox = &sandbox;

  ASSIGN_OR_RETURN(pid_t pid, SpawnChild(spec, plan));
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
