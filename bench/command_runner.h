// Runs one canhazgpu command as a real process for the load drivers
// (bench/contend, bench/handoff, tests/stress): posix_spawn, so the driver
// itself adds no shell and almost no fork cost to what is measured.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace canhazgpu::bench {

// Runs `args` (argv[0] looked up in PATH), stdout into `out` when given with
// trailing newlines removed, stderr discarded. Returns the exit status,
// 128+N for signal N, or -1 when it could not start.
inline int RunCommand(std::vector<std::string> args, std::string* out = nullptr) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string text;
  if (rc == 0) {
    char buf[256];
    ssize_t n;
    while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  if (rc != 0) return -1;
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace canhazgpu::bench
