#include "cli/k8shazgpu_sim/node_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/strings.h"

extern char** environ;

namespace canhazgpu::sim {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff{1000};
constexpr std::chrono::milliseconds kMaxBackoff{30'000};

std::string ExitText(int status) {
  if (WIFEXITED(status)) return StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return StrCat("was killed by signal ", WTERMSIG(status));
  return "stopped";
}

}  // namespace

int NodeProcess::Spawn() {
  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<std::string> argv_text = {options_.binary};
  argv_text.insert(argv_text.end(), options_.args.begin(), options_.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd =
      open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return -errno;
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(log_fd);
    return -error;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the simulator died already
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the simulator blocks its signals
    signal(SIGPIPE, SIG_DFL);
    execve(argv[0], argv.data(), environ);
    const int error = errno;
    (void)!write(error_pipe[1], &error, sizeof(error));
    _exit(127);
  }
  const int fork_error = errno;
  close(log_fd);
  close(error_pipe[1]);
  if (pid < 0) {
    close(error_pipe[0]);
    return -fork_error;
  }
  int exec_error = 0;
  const ssize_t n = read(error_pipe[0], &exec_error, sizeof(exec_error));
  close(error_pipe[0]);
  if (n == sizeof(exec_error)) {
    waitpid(pid, nullptr, 0);
    return -exec_error;
  }
  return pid;
}

absl::Status NodeProcess::Start() {
  supervisor_ = std::thread([this] { Supervise(); });
  MutexLock lock(mu_);
  cv_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return first_spawn_done_; });
  if (const int error = first_spawn_error_; error != 0) {
    lock.Unlock();
    supervisor_.join();
    return absl::FailedPreconditionError(
        StrCat("cannot start ", options_.binary, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

// Runs on its own thread, which is the daemon's parent thread: the death
// signal follows the thread that forked.
void NodeProcess::Supervise() {
  std::chrono::milliseconds backoff = kFirstBackoff;
  for (bool first = true;; first = false) {
    const int pid = Spawn();
    {
      MutexLock lock(mu_);
      if (first) {
        first_spawn_done_ = true;
        if (pid < 0) first_spawn_error_ = -pid;
        cv_.notify_all();
        if (pid < 0) return;
      }
      if (pid > 0) {
        pid_ = pid;
        exited_ = false;
        if (stopping_) kill(pid, SIGTERM);  // Stop() came while it started
      }
    }
    if (pid < 0) {
      if (options_.log)
        options_.log(StrCat("cannot restart ", options_.binary, ": ", std::strerror(-pid)));
    } else {
      if (options_.log) options_.log(StrCat("started ", options_.binary, " (pid ", pid, ")"));
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      MutexLock lock(mu_);
      exited_ = true;
      cv_.notify_all();
      if (stopping_) return;
      if (options_.log) {
        options_.log(StrCat(options_.binary, " (pid ", pid, ") ", ExitText(status),
                            "; restarting in ", backoff.count() / 1000.0, " s"));
      }
    }
    MutexLock lock(mu_);
    if (cv_.wait_for(lock, backoff,
                     [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; }))
      return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void NodeProcess::Stop(std::chrono::milliseconds grace) {
  if (!supervisor_.joinable()) return;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    if (!exited_ && pid_ > 0) {
      kill(pid_, SIGTERM);
      if (!cv_.wait_for(lock, grace,
                        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exited_; }))
        kill(pid_, SIGKILL);
    }
  }
  supervisor_.join();
}

}  // namespace canhazgpu::sim
