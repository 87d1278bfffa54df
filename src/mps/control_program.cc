#include "mps/control_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "core/strings.h"

extern char** environ;

namespace canhazgpu::mps {
namespace {

// environ with `env` laid over it, as NAME=VALUE strings.
std::vector<std::string> MergedEnvironment(const std::vector<EnvVar>& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    merged[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  for (const EnvVar& var : env) merged[var.name] = var.value;
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [name, value] : merged) out.push_back(StrCat(name, "=", value));
  return out;
}

struct Pipes {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  ~Pipes() {
    for (int* p : {in, out, err}) {
      for (int i = 0; i < 2; ++i) {
        if (p[i] >= 0) close(p[i]);
      }
    }
  }
};

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

absl::Status SpawnError(const std::string& program, int err) {
  std::string message = StrCat(program, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// Starts the child with the pipes as its stdin, stdout and stderr.
absl::StatusOr<pid_t> Spawn(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<EnvVar>& env, Pipes& pipes) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipes.in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes.out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipes.err[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Default dispositions and no blocked signals: the daemon it may start
  // must die of SIGTERM even when our caller ignores or blocks it.
  sigset_t all;
  sigfillset(&all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> argv_strings = {program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = MergedEnvironment(env);
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return SpawnError(program, rc);
  return pid;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Reads what one ready pipe has; closes it at end of file.
void ReadReady(int& fd, std::string& into) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0 && into.size() < (1 << 20)) into.append(buf, static_cast<size_t>(n));
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) CloseFd(fd);
}

// One round of feeding `input` and reading stdout and stderr, waiting at most
// `wait_ms` for any of them.
void ExchangeOnce(Pipes& pipes, const std::string& input, size_t& written, ControlResult& result,
                  int wait_ms) {
  int& in_fd = pipes.in[1];
  std::vector<pollfd> fds;
  if (in_fd >= 0) fds.push_back({in_fd, POLLOUT, 0});
  if (pipes.out[0] >= 0) fds.push_back({pipes.out[0], POLLIN, 0});
  if (pipes.err[0] >= 0) fds.push_back({pipes.err[0], POLLIN, 0});
  if (fds.empty() || poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    if (p.fd == in_fd) {
      ssize_t n = write(in_fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 || written == input.size()) CloseFd(in_fd);
    } else if (p.fd == pipes.out[0]) {
      ReadReady(pipes.out[0], result.out);
    } else {
      ReadReady(pipes.err[0], result.err);
    }
  }
}

// Feeds `input` and collects the output until the program exits (its exit
// status into `status`) and its pipes are drained, or the deadline passes
// (false). A daemon the program forked may hold copies of the pipes; once
// the program itself is gone, what is left to read is read without waiting.
bool Exchange(pid_t pid, Pipes& pipes, const std::string& input, ControlResult& result, int& status,
              const Clock& clock, MonoTime deadline) {
  size_t written = 0;
  if (input.empty()) CloseFd(pipes.in[1]);
  while (true) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      for (int i = 0; i < 64 && (pipes.out[0] >= 0 || pipes.err[0] >= 0); ++i) {
        ExchangeOnce(pipes, input, written, result, 0);
      }
      return true;
    }
    auto left = std::chrono::duration_cast<Duration>(deadline - clock.MonoNow()).count();
    if (left <= 0) return false;
    // Short rounds: the program's exit is noticed by waitpid, not by a pipe.
    ExchangeOnce(pipes, input, written, result, static_cast<int>(std::min<int64_t>(left, 20)));
  }
}

// While alive, this process is not a child subreaper. `nvidia-cuda-mps-control
// -d` forks the daemon and exits, and an orphan goes to the nearest subreaper
// ancestor: `canhazgpu run` is one (host/gated_child.h), and would then wait
// for the shared MPS daemon as if it were part of the job. Without the flag
// the daemon goes to init, as it does when started by hand.
class NotSubreaper {
 public:
  NotSubreaper() {
    int flag = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &flag) == 0 && flag != 0) {
      was_ = prctl(PR_SET_CHILD_SUBREAPER, 0) == 0;
    }
  }
  ~NotSubreaper() {
    if (was_) prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  NotSubreaper(const NotSubreaper&) = delete;
  NotSubreaper& operator=(const NotSubreaper&) = delete;

 private:
  bool was_ = false;
};

// While alive, SIGPIPE is blocked in this thread, and one it raised is taken
// back: a program that exits before reading its stdin must not kill us when
// we write to the pipe (the write fails with EPIPE instead).
class NoSigpipe {
 public:
  NoSigpipe() {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_);
  }
  ~NoSigpipe() {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1 && sigismember(&old_, SIGPIPE) == 0) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      timespec zero{};
      sigtimedwait(&pipe_only, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

absl::StatusOr<ControlResult> RunControl(const std::string& program,
                                         const std::vector<std::string>& args,
                                         const std::vector<EnvVar>& env, const std::string& input,
                                         const Clock& clock, Duration timeout) {
  Pipes pipes;
  if (pipe2(pipes.in, O_CLOEXEC) != 0 || pipe2(pipes.out, O_CLOEXEC) != 0 ||
      pipe2(pipes.err, O_CLOEXEC) != 0) {
    return absl::InternalError(StrCat(program, ": pipe: ", std::strerror(errno)));
  }
  NotSubreaper not_subreaper;
  NoSigpipe no_sigpipe;
  const MonoTime deadline = clock.DeadlineAfter(timeout);
  absl::StatusOr<pid_t> pid = Spawn(program, args, env, pipes);
  if (!pid.ok()) return pid.status();
  CloseFd(pipes.in[0]);
  CloseFd(pipes.out[1]);
  CloseFd(pipes.err[1]);
  ControlResult result;
  int status = 0;
  if (!Exchange(*pid, pipes, input, result, status, clock, deadline)) {
    kill(*pid, SIGKILL);
    while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
    return absl::DeadlineExceededError(
        StrCat(program, ": no answer within ", timeout.count() / 1000.0, "s"));
  }
  result.exit_code = ExitCode(status);
  return result;
}

}  // namespace canhazgpu::mps
