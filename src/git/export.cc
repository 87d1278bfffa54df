#include "git/export.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::git {
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
  return absl::UnavailableError(StrCat(std::string(what), " ", path, ": ", std::strerror(errno)));
}

// A name git could have written but that would leave the directory or
// create a repository inside it (git itself refuses these in verify_path).
bool IsSafeName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         !absl::EqualsIgnoreCase(absl::string_view(name.data(), name.size()), ".git") &&
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

struct FileJob {
  std::string path;  // relative to the export's root
  git_oid id;
  mode_t mode;
};

// Phase one, on the calling thread: walks the tree, creating directories,
// links and submodule placeholders, and lists the files to write.
class Layout {
 public:
  Layout(git_repository* repository, int root) : repository_(repository), root_(root) {}

  absl::Status Walk(const git_tree* tree, const std::string& prefix) {
    const size_t count = git_tree_entrycount(tree);
    for (size_t i = 0; i < count; ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const char* name = git_tree_entry_name(entry);
      const std::string path = StrCat(prefix, name);
      if (!IsSafeName(name)) {
        return absl::InvalidArgumentError(StrCat("refusing to export the tree entry '", path, "'"));
      }
      switch (git_tree_entry_filemode(entry)) {
        case GIT_FILEMODE_TREE:
          RETURN_IF_ERROR(WriteSubtree(entry, path));
          break;
        case GIT_FILEMODE_BLOB:
          files_.push_back({path, *git_tree_entry_id(entry), 0644});
          break;
        case GIT_FILEMODE_BLOB_EXECUTABLE:
          files_.push_back({path, *git_tree_entry_id(entry), 0755});
          break;
        case GIT_FILEMODE_LINK:
          RETURN_IF_ERROR(WriteLink(entry, path));
          break;
        case GIT_FILEMODE_COMMIT:  // a submodule: its place, as git archive leaves it
          RETURN_IF_ERROR(MakeDirectory(path));
          break;
        default:
          return absl::InvalidArgumentError(StrCat("tree entry '", path, "' has an unknown mode"));
      }
    }
    return absl::OkStatus();
  }

  std::vector<FileJob>& files() { return files_; }

 private:
  absl::Status MakeDirectory(const std::string& path) {
    // mkdirat's mode passes through the umask; fchmodat sets it exactly.
    if (mkdirat(root_, path.c_str(), 0755) != 0) return SystemError("creating", path);
    if (fchmodat(root_, path.c_str(), 0755, 0) != 0)
      return SystemError("setting the mode of", path);
    return absl::OkStatus();
  }

  absl::Status WriteSubtree(const git_tree_entry* entry, const std::string& path) {
    git_tree* raw = nullptr;
    int code = git_tree_lookup(&raw, repository_, git_tree_entry_id(entry));
    if (code < 0) return Error(code, StrCat("reading directory ", path));
    Tree tree(raw);
    RETURN_IF_ERROR(MakeDirectory(path));
    return Walk(tree.get(), StrCat(path, "/"));
  }

  absl::Status WriteLink(const git_tree_entry* entry, const std::string& path) {
    git_blob* raw = nullptr;
    int code = git_blob_lookup(&raw, repository_, git_tree_entry_id(entry));
    if (code < 0) return Error(code, StrCat("reading link ", path));
    Blob blob(raw);
    const std::string target(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                             static_cast<size_t>(git_blob_rawsize(blob.get())));
    if (target.empty() || target.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          StrCat("symbolic link '", path, "' has an empty or binary target"));
    }
    if (symlinkat(target.c_str(), root_, path.c_str()) != 0) {
      return SystemError("creating link", path);
    }
    return absl::OkStatus();
  }

  git_repository* repository_;
  int root_;
  std::vector<FileJob> files_;
};

// Phase two: writes files[next...] until none are left or one fails. Each
// worker has its own repository handle (libgit2 handles are per thread).
// Every parent directory exists and was made by phase one, and tree entry
// names are unique per directory, so no path can pass through a link.
absl::Status WriteFiles(const fs::path& repository_path, int root,
                        const std::vector<FileJob>& files, std::atomic<size_t>& next,
                        std::atomic<bool>& failed) {
  ASSIGN_OR_RETURN(Repository repository, Open(repository_path));
  git_odb* raw_odb = nullptr;
  int code = git_repository_odb(&raw_odb, repository.get());
  if (code < 0) return Error(code, "opening the object database");
  Odb odb(raw_odb);
  for (size_t i = next.fetch_add(1); i < files.size() && !failed.load(); i = next.fetch_add(1)) {
    const FileJob& file = files[i];
    git_odb_object* raw = nullptr;
    code = git_odb_read(&raw, odb.get(), &file.id);
    if (code < 0) return Error(code, StrCat("reading file ", file.path));
    std::unique_ptr<git_odb_object, Deleter<git_odb_object, git_odb_object_free>> object(raw);
    Fd fd(openat(root, file.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 file.mode));
    if (fd.get() < 0) return SystemError("creating", file.path);
    RETURN_IF_ERROR(WriteAll(fd.get(), static_cast<const char*>(git_odb_object_data(object.get())),
                             git_odb_object_size(object.get()), file.path));
    // The umask must not decide the mode.
    if (fchmod(fd.get(), file.mode) != 0) return SystemError("setting the mode of", file.path);
  }
  return absl::OkStatus();
}

// Writing files is mostly kernel time (creating inodes, copying pages) and
// inflating objects, both of which spread over cores; below a few hundred
// files a thread costs more than it saves.
absl::Status WriteFilesInParallel(const fs::path& repository_path, int root,
                                  const std::vector<FileJob>& files) {
  constexpr size_t kFilesPerThread = 256;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads =
      std::clamp<size_t>(files.size() / kFilesPerThread, 1, std::min<size_t>(cores, 8));
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<absl::Status> results(threads);
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      results[t] = WriteFiles(repository_path, root, files, next, failed);
      if (!results[t].ok()) failed = true;
    });
  }
  results[0] = WriteFiles(repository_path, root, files, next, failed);
  if (!results[0].ok()) failed = true;
  for (std::thread& worker : workers) worker.join();
  for (absl::Status& result : results) {
    if (!result.ok()) return result;
  }
  return absl::OkStatus();
}

std::string ExportingPrefix(const fs::path& dest) {
  return StrCat(".", dest.filename().string(), ".exporting-");
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
        StrCat(dest.string(), " already exists; export into a new directory"));
  }
  ASSIGN_OR_RETURN(git_oid oid, ParseOid(commit_hex));
  ASSIGN_OR_RETURN(Repository repository, Open(repository_path));
  git_commit* raw_commit = nullptr;
  if (git_commit_lookup(&raw_commit, repository.get(), &oid) < 0) {
    return absl::NotFoundError(
        StrCat("commit ", std::string(commit_hex), " is not in ", repository_path.string()));
  }
  Commit commit(raw_commit);
  git_tree* raw_tree = nullptr;
  int code = git_commit_tree(&raw_tree, commit.get());
  if (code < 0) return Error(code, StrCat("reading the tree of ", std::string(commit_hex)));
  Tree tree(raw_tree);

  RemoveLeftoverExports(dest);
  static std::atomic<int> counter{0};
  const fs::path temporary =
      dest.parent_path() / StrCat(ExportingPrefix(dest), getpid(), "-", counter.fetch_add(1));
  if (mkdir(temporary.c_str(), 0755) != 0) return SystemError("creating", temporary.string());
  absl::Status status = [&]() -> absl::Status {
    Fd dir(open(temporary.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) return SystemError("opening", temporary.string());
    if (fchmod(dir.get(), 0755) != 0) return SystemError("setting the mode of", temporary.string());
    Layout layout(repository.get(), dir.get());
    RETURN_IF_ERROR(layout.Walk(tree.get(), ""));
    return WriteFilesInParallel(repository_path, dir.get(), layout.files());
  }();
  // RENAME_NOREPLACE: an empty directory created meanwhile at `dest` must
  // not be silently replaced either.
  if (status.ok() &&
      renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) != 0) {
    status = errno == EEXIST ? absl::AlreadyExistsError(StrCat(
                                   dest.string(), " already exists; export into a new directory"))
                             : SystemError("renaming the export to", dest.string());
  }
  if (!status.ok()) fs::remove_all(temporary, ec);
  return status;
}

}  // namespace canhazgpu::git
