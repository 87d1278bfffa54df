// Reservations per second with N processes contending (bench/commands.sh):
// N threads, each R rounds of `canhazgpu reserve -g 1 --short --nonblock` and, when it
// was granted, `canhazgpu release -G <id>`. Every command is a real process
// started with posix_spawn, so what is measured is the commands, not the
// shell forks a bash loop would add (about a third of the CPU time).
// Usage: contend CANHAZGPU WORKERS ROUNDS
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "command_runner.h"

using canhazgpu::bench::RunCommand;

int main(int argc, char** argv) {
  if (argc != 4 || atoi(argv[2]) <= 0 || atoi(argv[3]) <= 0) {
    fprintf(stderr, "usage: contend CANHAZGPU WORKERS ROUNDS\n");
    return 2;
  }
  const std::string chg = argv[1];
  const int workers = atoi(argv[2]);
  const int rounds = atoi(argv[3]);
  std::atomic<int> granted = 0, failed = 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      std::string out;
      for (int r = 0; r < rounds; ++r) {
        int rc = RunCommand({chg, "reserve", "-g", "1", "--short", "--nonblock"}, &out);
        if (rc == 3) continue;  // all GPUs taken right now
        if (rc != 0) {
          ++failed;
          continue;
        }
        ++granted;
        if (RunCommand({chg, "release", "-G", out}, &out) != 0) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%d of %d attempts reserved a GPU (each then released) in %.2f s: %.0f reservations/s\n",
         granted.load(), workers * rounds, seconds, granted / seconds);
  if (failed > 0) {
    fprintf(stderr, "%d commands failed\n", failed.load());
    return 1;
  }
  return 0;
}
