// A SQLite VFS for tests that wraps the default one and injects faults at
// its "kill points": every call that writes, syncs, truncates, deletes or
// takes or drops a lock (file or WAL-index). Armed to exit, the process
// _exit()s just before the N-th kill point, as if SIGKILLed there (the page
// cache keeps what was written, as it does for a killed process); armed to
// fail, every write and truncate from the N-th kill point on returns
// SQLITE_FULL, as on a full disk.
//
// Open a store on it with SqliteOptions{.vfs = FaultVfs::kName}. The state
// is process-wide (SQLite's VFS registry is); use it from one thread.
#pragma once

namespace canhazgpu::store::testing {

enum class FaultAction { kNone, kExit, kDiskFull };

class FaultVfs {
 public:
  static constexpr const char* kName = "canhazgpu_fault";
  // The exit status of a process stopped at a kill point.
  static constexpr int kExitCode = 86;

  // Registers the VFS (idempotent; not as the default).
  static void Register();
  // From now, act at the `at`-th kill point (1-based; 0: never) and count
  // kill points afresh.
  static void Arm(FaultAction action, int at);
  // Kill points passed since the last Arm().
  static int KillPoints();
};

}  // namespace canhazgpu::store::testing
