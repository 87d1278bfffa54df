#include "core/file_write.h"

#include <unistd.h>

#include <cerrno>

#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu {
namespace {

// As in AtomicFile::Create: a taken name is skipped, never removed or reused.
constexpr int kLinkNameAttempts = 16;

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode,
                                 FileSync sync) {
  ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, mode, sync));
  RETURN_IF_ERROR(file.Append(text));
  return file.Commit();
}

absl::Status CreateSymlinkAtomically(const std::string& path, const std::string& target) {
  for (int attempt = 0; attempt < kLinkNameAttempts; ++attempt) {
    ASSIGN_OR_RETURN(const std::string temporary, RandomTemporaryPathFor(path));
    // symlink() never follows or replaces what is at its path: EEXIST.
    if (symlink(target.c_str(), temporary.c_str()) != 0) {
      if (errno == EEXIST) continue;
      return LocalFileError(errno, StrCat("cannot create the symlink ", path));
    }
    if (rename(temporary.c_str(), path.c_str()) != 0) {
      const int err = errno;
      unlink(temporary.c_str());
      return LocalFileError(err, StrCat("cannot replace ", path, " with a symlink"));
    }
    return absl::OkStatus();
  }
  return absl::AlreadyExistsError(StrCat("cannot create the symlink ", path, ": ",
                                         kLinkNameAttempts,
                                         " random temporary names beside it were all taken"));
}

}  // namespace canhazgpu
