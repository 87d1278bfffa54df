#include "git/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "git/git.h"

namespace git {
namespace {

namespace fs = std::filesystem;

// Closes a descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status SystemError(std::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(std::string(what), " ", path, ": ", std::strerror(errno)));
}

// A name git could have written but that would leave the directory or
// create a repository inside it (git itself refuses these in verify_path).
bool IsSafeName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && !absl::EqualsIgnoreCase(absl::string_view(name.data(), name.size()), ".git") &&
         name.find('/') == std::string_view::npos;
}

absl::Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t written = write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return SystemError("writing", path);
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

class Exporter {
 public:
  explicit Exporter(git_repository* repository) : repository_(repository) {}

  // Writes the entries of `tree` into the open directory `dir`, whose path
  // in the export is `prefix` (for messages).
  absl::Status WriteTree(const git_tree* tree, int dir, const std::string& prefix) {
    const size_t count = git_tree_entrycount(tree);
    for (size_t i = 0; i < count; ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const char* name = git_tree_entry_name(entry);
      const std::string path = absl::StrCat(prefix, name);
      if (!IsSafeName(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("refusing to export the tree entry '", path, "'"));
      }
      switch (git_tree_entry_filemode(entry)) {
        case GIT_FILEMODE_TREE:
          RETURN_IF_ERROR(WriteSubtree(entry, dir, name, path));
          break;
        case GIT_FILEMODE_BLOB:
          RETURN_IF_ERROR(WriteFile(entry, dir, name, path, 0644));
          break;
        case GIT_FILEMODE_BLOB_EXECUTABLE:
          RETURN_IF_ERROR(WriteFile(entry, dir, name, path, 0755));
          break;
        case GIT_FILEMODE_LINK:
          RETURN_IF_ERROR(WriteLink(entry, dir, name, path));
          break;
        case GIT_FILEMODE_COMMIT:  // a submodule: its place, as git archive leaves it
          if (mkdirat(dir, name, 0755) != 0) return SystemError("creating", path);
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("tree entry '", path, "' has an unknown mode"));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status WriteSubtree(const git_tree_entry* entry, int parent, const char* name,
                            const std::string& path) {
    git_tree* raw = nullptr;
    int code = git_tree_lookup(&raw, repository_, git_tree_entry_id(entry));
    if (code < 0) return Error(code, absl::StrCat("reading directory ", path));
    Tree tree(raw);
    if (mkdirat(parent, name, 0755) != 0) return SystemError("creating", path);
    Fd dir(openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return SystemError("opening", path);
    if (fchmod(dir.get(), 0755) != 0) return SystemError("setting the mode of", path);
    return WriteTree(tree.get(), dir.get(), absl::StrCat(path, "/"));
  }

  absl::StatusOr<Blob> LookupBlob(const git_tree_entry* entry, const std::string& path) {
    git_blob* raw = nullptr;
    int code = git_blob_lookup(&raw, repository_, git_tree_entry_id(entry));
    if (code < 0) return Error(code, absl::StrCat("reading file ", path));
    return Blob(raw);
  }

  absl::Status WriteFile(const git_tree_entry* entry, int dir, const char* name,
                         const std::string& path, mode_t mode) {
    ASSIGN_OR_RETURN(Blob blob, LookupBlob(entry, path));
    Fd fd(openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd.get() < 0) return SystemError("creating", path);
    RETURN_IF_ERROR(WriteAll(fd.get(), static_cast<const char*>(git_blob_rawcontent(blob.get())),
                             static_cast<size_t>(git_blob_rawsize(blob.get())), path));
    // The umask must not decide the mode.
    if (fchmod(fd.get(), mode) != 0) return SystemError("setting the mode of", path);
    return absl::OkStatus();
  }

  absl::Status WriteLink(const git_tree_entry* entry, int dir, const char* name,
                         const std::string& path) {
    ASSIGN_OR_RETURN(Blob blob, LookupBlob(entry, path));
    const std::string target(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                             static_cast<size_t>(git_blob_rawsize(blob.get())));
    if (target.empty() || target.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("symbolic link '", path, "' has an empty or binary target"));
    }
    if (symlinkat(target.c_str(), dir, name) != 0) return SystemError("creating link", path);
    return absl::OkStatus();
  }

  git_repository* repository_;
};

std::string ExportingPrefix(const fs::path& dest) {
  return absl::StrCat(".", dest.filename().string(), ".exporting-");
}

// What an interrupted export of `dest` left behind.
void RemoveLeftoverExports(const fs::path& dest) {
  std::error_code ec;
  const std::string prefix = ExportingPrefix(dest);
  for (const fs::directory_entry& entry : fs::directory_iterator(dest.parent_path(), ec)) {
    if (absl::StartsWith(entry.path().filename().string(), prefix)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

}  // namespace

absl::Status ExportCommit(const fs::path& repository_path, std::string_view commit_hex,
                          const fs::path& dest_in) {
  const fs::path dest = dest_in.has_filename() ? dest_in : dest_in.parent_path();
  std::error_code ec;
  if (fs::symlink_status(dest, ec).type() != fs::file_type::not_found) {
    return absl::AlreadyExistsError(
        absl::StrCat(dest.string(), " already exists; export into a new directory"));
  }
  ASSIGN_OR_RETURN(git_oid oid, ParseOid(commit_hex));
  ASSIGN_OR_RETURN(Repository repository, Open(repository_path));
  git_commit* raw_commit = nullptr;
  if (git_commit_lookup(&raw_commit, repository.get(), &oid) < 0) {
    return absl::NotFoundError(absl::StrCat("commit ", std::string(commit_hex), " is not in ",
                                            repository_path.string()));
  }
  Commit commit(raw_commit);
  git_tree* raw_tree = nullptr;
  int code = git_commit_tree(&raw_tree, commit.get());
  if (code < 0) return Error(code, absl::StrCat("reading the tree of ", std::string(commit_hex)));
  Tree tree(raw_tree);

  RemoveLeftoverExports(dest);
  static std::atomic<int> counter{0};
  const fs::path temporary = dest.parent_path() / absl::StrCat(ExportingPrefix(dest), getpid(),
                                                               "-", counter.fetch_add(1));
  if (mkdir(temporary.c_str(), 0755) != 0) return SystemError("creating", temporary.string());
  absl::Status status = [&]() -> absl::Status {
    Fd dir(open(temporary.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return SystemError("opening", temporary.string());
    if (fchmod(dir.get(), 0755) != 0) return SystemError("setting the mode of", temporary.string());
    return Exporter(repository.get()).WriteTree(tree.get(), dir.get(), "");
  }();
  // RENAME_NOREPLACE: an empty directory created meanwhile at `dest` must
  // not be silently replaced either.
  if (status.ok() && renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, dest.c_str(),
                               RENAME_NOREPLACE) != 0) {
    status = errno == EEXIST
                 ? absl::AlreadyExistsError(
                       absl::StrCat(dest.string(), " already exists; export into a new directory"))
                 : SystemError("renaming the export to", dest.string());
  }
  if (!status.ok()) fs::remove_all(temporary, ec);
  return status;
}

}  // namespace git
