// SIGINT and SIGTERM while `run` is in flight: the handler only records
// the signal (an atomic flag, async-signal-safe); the command sees it
// between steps and in its waits (Client::Watch and StreamLogs take the
// flag as their cancel), and decides what to delete. One per process.
#pragma once

#include <atomic>

namespace canhazgpu::cli::k8s {

class InterruptGuard {
 public:
  // Installs the handlers; the destructor puts the previous ones back.
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // True once a signal came (until Clear()).
  static const std::atomic<bool>& Flag();
  static bool Interrupted() { return Flag().load(); }
  // The last signal received (SIGINT, SIGTERM), or 0.
  static int Signal();
  // Forgets the signal (after asking the user what to do about it).
  static void Clear();
  // 128 + the signal, as a shell reports a process it killed.
  static int ExitCode();
};

// Asks a person at a terminal what Ctrl-C should do: "detach (`kept`) or
// delete it? [d/D]". True: detach. A second Ctrl-C, or the end of input,
// means delete.
bool AskDetach(const char* kept);

}  // namespace canhazgpu::cli::k8s
