// A StateStore that follows the state file's path rather than one file:
// before each Update or Read it compares the file at the path with the one
// it has open (device and inode), and when another file is there (the state
// file was deleted and `canhazgpu admin` made a new one) it opens that one
// and says so. k8shazgpu-node keeps its store open for weeks; without this
// it went on reading and writing the deleted file, publishing slices nobody
// else saw and reserving GPUs no local user's command could see.
//
// While no file, or one that cannot be opened yet (admin still creating it),
// is at the path, the open file is kept and the next call looks again.
// Thread-safe: one Update or Read at a time, as LockedStateStore, since the
// wrapped store (one SQLite connection) must only be used by one thread at a
// time.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/log.h"
#include "core/mutex.h"
#include "store/state_store.h"

namespace canhazgpu::store {

class ReopeningStateStore : public StateStore {
 public:
  using Opener = std::function<absl::StatusOr<std::unique_ptr<StateStore>>(const std::string&)>;

  // Opens the file at `path` with `open`, now and after each replacement;
  // `log` gets one line per replacement noticed (and per failure to open
  // the new file, once each).
  static absl::StatusOr<std::unique_ptr<ReopeningStateStore>> Open(const std::string& path,
                                                                   Opener open, Log log);

  absl::Status Update(const TransactionFn& fn) override;
  absl::Status Read(const TransactionFn& fn) override;

  // How many times another file was opened.
  int reopens() const;

 private:
  struct FileId {
    dev_t device = 0;
    ino_t inode = 0;
    bool operator==(const FileId&) const = default;
  };
  // The file at `path` now; nullopt when there is none.
  static std::optional<FileId> Identify(const std::string& path);
  ReopeningStateStore(std::string path, Opener open, Log log)
      : path_(std::move(path)), open_(std::move(open)), log_(std::move(log)) {}
  // Under mu_: opens the file at path_ when it is not the open one.
  void FollowPath() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const Opener open_;
  const Log log_;
  mutable Mutex mu_;
  std::unique_ptr<StateStore> inner_ ABSL_GUARDED_BY(mu_);
  FileId open_file_ ABSL_GUARDED_BY(mu_);
  std::string last_failure_ ABSL_GUARDED_BY(mu_);  // the last failure to open a new file, said once
  int reopens_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace canhazgpu::store
