// Lets a process that waits for the state to change (a queued request) be
// woken when another process commits to the SQLite state file, instead of
// finding out at its next poll.
//
// SQLite in WAL mode appends every commit to `<db>-wal` and checkpoints into
// `<db>`; both are plain write(2)s, which inotify reports. (The `-shm` index
// is written through mmap, which inotify does not see, and a transaction
// that changes nothing writes nothing, so a waiter's own empty polls do not
// wake it.) The directory is watched rather than the files, because the WAL
// file comes and goes with the connections.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu::store {

class ChangeWatcher {
 public:
  // Watches the SQLite file `db_path` and its WAL.
  static absl::StatusOr<ChangeWatcher> Watch(const std::string& db_path);

  ChangeWatcher(ChangeWatcher&& other) noexcept;
  ChangeWatcher& operator=(ChangeWatcher&&) = delete;
  ChangeWatcher(const ChangeWatcher&) = delete;
  ~ChangeWatcher();

  // Readable (poll/epoll) when a change may have happened.
  int fd() const { return fd_; }

  // Consumes what is pending; true if one of the events named our files.
  bool Drain();

  // Leaves the descriptor open when this object is destroyed; the process's
  // exit closes it. Closing an inotify instance waits for an RCU grace
  // period in the kernel (10-20 ms measured here), which a waiter that just
  // got its GPUs should not spend before starting the job or printing.
  void KeepOpenUntilExit() { keep_open_ = true; }

 private:
  ChangeWatcher(int fd, std::string db_name) : fd_(fd), db_name_(std::move(db_name)) {}

  int fd_;
  std::string db_name_;  // file name without directory
  bool keep_open_ = false;
};

}  // namespace canhazgpu::store
