// The state file on disk, checked before SQLite opens it. The file lives in
// a directory every local user may write (mode 1777), so its path is not
// trusted: a user could plant a symbolic link there (to a file of root's,
// which root's `admin` would then turn into a database) or create the file
// first and so own the pool. The policy (docs/state.md, "Permissions"):
//
// - the file, and its -wal and -shm companions when present, must be regular
//   files, never followed as symbolic links (O_NOFOLLOW, then fstat);
// - only the file's owner may (re)initialize the pool, so `admin` run as
//   root refuses a file another user created, and another user's
//   `admin --force` cannot end everyone's reservations;
// - `admin` creates the directory 1777 and the file 0666 itself, in one
//   place, whatever the provider.
//
// Functions only; safe to call from any thread.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu::store {

struct StateFileInfo {
  uid_t owner = 0;
  // Whether this process may write it; false on a read-only file system or
  // file (views then open it read-only and say they could not write).
  bool writable = true;
};

// Checks that `path` and its -wal and -shm files are regular files or
// absent (the main file must exist: NotFound otherwise). A symbolic link or
// anything else is PermissionDenied, naming the file.
absl::StatusOr<StateFileInfo> InspectStateFile(const std::string& path);

// The user name of `uid` ("uid N" when it has none).
std::string UserName(uid_t uid);

// Refuses (PermissionDenied) unless `caller` owns the existing state file
// `info`: initializing the pool is its owner's alone.
absl::Status CheckMayInitialize(const std::string& path, const StateFileInfo& info, uid_t caller);

// Creates the state directory of `path` when missing, mode 1777 whatever the
// umask; an existing one is kept, but refused when others may write it
// without the sticky bit (anyone could then replace the state file).
// `*created` says whether it was created.
absl::Status CreateStateDirectory(const std::string& path, bool* created);

// Creates the state file `path` (which must not exist: O_EXCL, never
// following a link planted meanwhile) with mode 0666, and empty -wal and
// -shm files beside it, so that SQLite never creates them through a link.
absl::Status CreateStateFile(const std::string& path);

}  // namespace canhazgpu::store
