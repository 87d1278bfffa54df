#include "changeset/blob_id.h"

#include <errno.h>
#include <sys/stat.h>

#include <cstring>

#include "changeset/disk_files.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {

git_oid BlobIdOf(std::string_view bytes) {
  git::EnsureInitialized();
  git_oid oid;
  // Hashing a buffer cannot fail for the blob type.
  git_odb_hash(&oid, bytes.data(), bytes.size(), GIT_OBJECT_BLOB);
  return oid;
}

absl::StatusOr<std::optional<git_oid>> BlobIdAt(const std::filesystem::path& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<git_oid>();
    return absl::InternalError(StrCat("reading ", path.string(), ": ", std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    ASSIGN_OR_RETURN(std::string target, ReadSymlinkTarget(path));
    return std::optional<git_oid>(BlobIdOf(target));
  }
  if (S_ISREG(st.st_mode)) {
    ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path, static_cast<uint64_t>(st.st_size)));
    return std::optional<git_oid>(BlobIdOf(bytes));
  }
  return absl::FailedPreconditionError(
      StrCat(path.string(), " is ", S_ISDIR(st.st_mode) ? "a directory" : "not a regular file",
             ", where git expects a file or a symlink"));
}

}  // namespace canhazgpu::changeset
