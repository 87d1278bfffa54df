// A file written under a temporary name beside its target and renamed over
// it once complete, so that a reader - or the next start after a crash -
// sees the old contents or the new ones, never a mix. Contents may arrive
// in pieces, so a large file never has to be held in memory whole.
//
// The temporary name is random (".NAME.tmp.<16 hex digits>") and created
// with O_CREAT|O_EXCL|O_NOFOLLOW: whoever can write to the directory (a
// tenant's tree handed to `vllm unpack`, say) cannot plant a symlink at a
// name we are about to open and make us write or chmod a file elsewhere; a
// name already taken, a crash's leftover included, is skipped, not reused.
//
// Thread safety: an AtomicFile is used by one thread at a time; distinct
// ones (distinct targets) may be used from distinct threads.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace canhazgpu {

// Whether the write must survive a power loss (two fsyncs, about 12 ms a
// file on a loaded VM) or only be atomic for readers on a running system.
enum class FileSync { kDurable, kAtomicOnly };

class AtomicFile {
 public:
  // Creates the temporary file beside `path` with permission bits exactly
  // `mode` (the umask does not apply). The directory must exist.
  static absl::StatusOr<AtomicFile> Create(const std::string& path, mode_t mode,
                                           FileSync sync = FileSync::kDurable);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless Commit() succeeded: the target is
  // then as it was.
  ~AtomicFile();

  absl::Status Append(std::string_view bytes);
  // Puts the file in place of the target (a symlink there is replaced, not
  // followed). Call at most once; after a failure the target is untouched.
  absl::Status Commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, std::string temporary, int fd, FileSync sync)
      : path_(std::move(path)), temporary_(std::move(temporary)), fd_(fd), sync_(sync) {}
  absl::Status Failed(const char* what, int err);

  std::string path_;
  std::string temporary_;  // empty once renamed or removed
  int fd_ = -1;
  FileSync sync_;
};

// A fresh random name for a temporary file beside `path`, in the same
// directory (a rename never crosses file systems): ".NAME.tmp.<16 hex>",
// NAME cut short so the whole stays a legal file name.
absl::StatusOr<std::string> RandomTemporaryPathFor(std::string_view path);

// The status for a failed system call on a local file: "MESSAGE: REASON",
// coded by errno (NotFound, PermissionDenied, AlreadyExists,
// FailedPrecondition for a file of the wrong kind, Internal otherwise) and
// never Unavailable, which callers take for "the network, retry".
absl::Status LocalFileError(int err, std::string_view message);

// Opens a file kept under a fixed name - a lock file, a partial download
// resumed by name - with `flags` | O_CREAT | O_NOFOLLOW | O_CLOEXEC. A
// symlink found at `path` was planted by whoever can write to the directory
// (ours never makes one): it is removed and the open tried once more, so we
// neither write through it nor stay locked out by it. Returns the fd, or -1
// with errno set.
int OpenFixedNameFile(const std::string& path, int flags, mode_t mode);

}  // namespace canhazgpu
