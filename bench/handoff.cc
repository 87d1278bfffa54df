// Release → head waiter latency (docs/perf.md):
//
//   handoff CANHAZGPU ROUNDS
//
// Each round: every GPU of the pool is reserved; a waiter process runs
// `reserve -g 1 --short` and queues; once its first progress line shows it
// is waiting, and after a random pause (so the release does not always land
// at the same point of the waiter's poll cycle), `release -G 0` runs. The
// time measured is from starting `release` to the waiter having printed the
// GPU it now holds: an upper bound on the handoff, since it includes the
// release command's own run time. (Not to the waiter's exit: closing its
// inotify descriptor at exit waits for a kernel RCU grace period, 10-20 ms,
// after the GPU is held and the ids are printed.) Prints median, p90, p99 and max.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "command_runner.h"

using canhazgpu::bench::RunCommand;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct Waiter {
  pid_t pid = -1;
  int out = -1;  // its stdout: the ids, once it has them
  int err = -1;  // its stderr: progress lines
};

Waiter StartWaiter(const std::string& chg) {
  int out[2], err[2];
  Waiter w;
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return w;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<std::string> args = {chg, "reserve", "-g", "1", "--short"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&w.pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) w.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  w.out = out[0];
  w.err = err[0];
  return w;
}

// Blocks until `fd` has data (or EOF); returns what was read.
std::string ReadSome(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  poll(&p, 1, 30'000);
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || atoi(argv[2]) <= 0) {
    fprintf(stderr, "usage: handoff CANHAZGPU ROUNDS\n");
    return 2;
  }
  const std::string chg = argv[1];
  const int rounds = atoi(argv[2]);
  std::mt19937 rng(42);
  std::vector<double> ms, release_ms;
  for (int r = 0; r < rounds; ++r) {
    if (RunCommand({chg, "reserve", "--gpus", "8"}) != 0) {
      fprintf(stderr, "could not reserve the pool (is it 8 GPUs, and free?)\n");
      return 1;
    }
    Waiter w = StartWaiter(chg);
    if (w.pid < 0 || ReadSome(w.err).find("waiting") == std::string::npos) {
      fprintf(stderr, "the waiter did not queue\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 120'000));
    auto start = SteadyClock::now();
    if (RunCommand({chg, "release", "-G", "0"}) != 0) return 1;
    release_ms.push_back(
        std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count());
    // The ids arrive in one write, flushed when the waiter returns from main.
    std::string ids = ReadSome(w.out);
    auto got = SteadyClock::now();
    int status = 0;
    waitpid(w.pid, &status, 0);
    close(w.out);
    close(w.err);
    if (ids != "0" || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "the waiter got '%s' (exit %d), expected GPU 0\n", ids.c_str(),
              WEXITSTATUS(status));
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(got - start).count());
    if (RunCommand({chg, "release"}) != 0) return 1;
  }
  printf(
      "release -> head waiter holds the GPU, %d rounds: median %.1f ms, p90 %.1f ms, "
      "p99 %.1f ms, max %.1f ms\n",
      rounds, Percentile(ms, 0.5), Percentile(ms, 0.9), Percentile(ms, 0.99),
      *std::max_element(ms.begin(), ms.end()));
  printf("(the release command itself: median %.1f ms)\n", Percentile(release_ms, 0.5));
  return 0;
}
