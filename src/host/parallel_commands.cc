#include "host/parallel_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace canhazgpu::host {
namespace {

int64_t NowMillis() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

struct Running {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

Running Start(const std::vector<std::string>& command, CommandOutput& result) {
  Running run;
  int out[2], err[2];
  if (command.empty()) {
    result.start_error = "empty command";
    return run;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    result.start_error = std::strerror(errno);
    return run;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    result.start_error = std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  // The child gets default signal dispositions (we ignore SIGPIPE) and no
  // blocked signals (the dashboard blocks SIGINT and SIGTERM in every thread
  // to take them itself; its ssh children must still die of them).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t unblocked;
  sigemptyset(&unblocked);
  posix_spawnattr_setsigmask(&attr, &unblocked);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int rc = posix_spawnp(&run.pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    result.start_error = std::strerror(rc);
    close(out[0]);
    close(err[0]);
    run.pid = -1;
    return run;
  }
  run.out_fd = out[0];
  run.err_fd = err[0];
  return run;
}

// Reads what is there; closes the fd at end of file.
void Drain(int& fd, std::string& into, size_t max_output) {
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) {
    size_t room = max_output > into.size() ? max_output - into.size() : 0;
    into.append(buf, std::min(room, static_cast<size_t>(n)));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    CloseFd(fd);
  }
}

}  // namespace

std::vector<CommandOutput> RunInParallel(const std::vector<std::vector<std::string>>& commands,
                                         Duration timeout, size_t max_output) {
  std::vector<CommandOutput> results(commands.size());
  std::vector<Running> running(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) running[i] = Start(commands[i], results[i]);
  const int64_t deadline = NowMillis() + timeout.count();
  bool killed = false;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owners;  // (command, is stdout)
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].out_fd >= 0) {
        fds.push_back({running[i].out_fd, POLLIN, 0});
        owners.push_back({i, true});
      }
      if (running[i].err_fd >= 0) {
        fds.push_back({running[i].err_fd, POLLIN, 0});
        owners.push_back({i, false});
      }
    }
    if (fds.empty()) break;
    int64_t left = deadline - NowMillis();
    if (left <= 0 && !killed) {
      // Past the deadline: kill what still runs; its pipes then reach EOF
      // (unless it left children holding them, which the next pass bounds).
      for (size_t i = 0; i < running.size(); ++i) {
        if (running[i].pid > 0 && (running[i].out_fd >= 0 || running[i].err_fd >= 0)) {
          kill(running[i].pid, SIGKILL);
          results[i].timed_out = true;
        }
      }
      killed = true;
    }
    int wait_ms = killed ? 1000 : static_cast<int>(std::max<int64_t>(left, 0));
    int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 && killed) {
      // Grandchildren keep the pipes open; stop listening.
      for (Running& r : running) {
        CloseFd(r.out_fd);
        CloseFd(r.err_fd);
      }
      break;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto [i, is_out] = owners[k];
      Drain(is_out ? running[i].out_fd : running[i].err_fd,
            is_out ? results[i].out : results[i].err, max_output);
    }
  }
  for (size_t i = 0; i < running.size(); ++i) {
    if (running[i].pid <= 0) continue;
    int status = 0;
    while (waitpid(running[i].pid, &status, 0) < 0 && errno == EINTR) {
    }
    results[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return results;
}

}  // namespace canhazgpu::host
