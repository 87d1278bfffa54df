#include "changeset/unpack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <system_error>

#include "changeset/blob_id.h"
#include "changeset/bundle.h"
#include "core/atomic_file.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

namespace fs = std::filesystem;

constexpr size_t kRejectedShown = 20;
// The name of a result being built inside an existing `to_dir` (an
// emptyDir's mount point cannot be renamed over), before the random part.
constexpr char kStagingName[] = "canhazgpu-unpack";
constexpr char kStagingPrefix[] = ".canhazgpu-unpack.tmp.";

// "below the symlink DIR" when a directory above `relative` in `root` is a
// symlink (git never stores a path below one); "" otherwise.
std::string SymlinkAbove(const fs::path& root, const std::string& relative) {
  fs::path at = root;
  const std::vector<std::string_view> parts = Split(relative, '/');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    at /= std::string(parts[i]);
    struct stat st;
    if (lstat(at.c_str(), &st) != 0) return "";
    if (S_ISLNK(st.st_mode))
      return StrCat("below the symlink ", at.lexically_relative(root).string());
  }
  return "";
}

// The paths whose base is not what the change set expects, each with why.
absl::Status CheckBase(const ChangeSet& change_set, const fs::path& base_dir) {
  std::vector<std::string> rejected;
  size_t count = 0;
  for (const ChangeEntry& e : change_set.entries) {
    std::string why = SymlinkAbove(base_dir, e.path);
    absl::StatusOr<std::optional<git_oid>> found =
        why.empty() ? BlobIdAt(base_dir / e.path) : std::optional<git_oid>();
    if (!why.empty()) {
      // Checking or writing it would reach through the link.
    } else if (!found.ok()) {
      // A directory where the base has no file is fine: the change set
      // empties it when a file takes its place.
      const bool directory = found.status().code() == absl::StatusCode::kFailedPrecondition;
      if (e.base_blob.has_value() || !directory) why = std::string(found.status().message());
    } else if (e.base_blob.has_value() && !found->has_value()) {
      why = "missing";
    } else if (e.base_blob.has_value() && !git_oid_equal(&**found, &*e.base_blob)) {
      why = StrCat("blob ", git::ToHex(**found).substr(0, 12), ", expected ",
                   git::ToHex(*e.base_blob).substr(0, 12));
    } else if (!e.base_blob.has_value() && found->has_value()) {
      why = "present, expected absent";
    }
    if (why.empty()) continue;
    if (++count <= kRejectedShown) rejected.push_back(StrCat(e.path, " (", why, ")"));
  }
  if (count == 0) return absl::OkStatus();
  std::string more = count > kRejectedShown ? StrCat(" and ", count - kRejectedShown, " more") : "";
  return absl::FailedPreconditionError(
      StrCat("the base directory is not the change set's merge-base ",
             change_set.base_commit.substr(0, 12), ": ", count, " rejected path",
             count == 1 ? "" : "s", ": ", Join(rejected, ", "), more, "; nothing was written"));
}

// Creates the parents of `relative` under `root`, refusing to pass through
// a symlink: the write must land inside `root`.
absl::Status MakeParents(const fs::path& root, const std::string& relative) {
  fs::path at = root;
  const std::vector<std::string_view> parts = Split(relative, '/');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    at /= std::string(parts[i]);
    struct stat st;
    if (lstat(at.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return absl::FailedPreconditionError(
          StrCat("cannot write ", relative, ": ", at.string(),
                 S_ISLNK(st.st_mode) ? " is a symlink" : " is not a directory"));
    }
    if (errno != ENOENT || (mkdir(at.c_str(), 0755) != 0 && errno != EEXIST)) {
      return absl::InternalError(StrCat("creating ", at.string(), ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

// Removes the directories above `relative` that the deletion left empty, as
// git does: git does not keep empty directories.
void PruneEmptyParents(const fs::path& root, const std::string& relative) {
  fs::path at = (root / relative).parent_path();
  while (at != root && at.string().size() > root.string().size()) {
    if (rmdir(at.c_str()) != 0) return;  // not empty, or gone
    at = at.parent_path();
  }
}

// Streams the second read of the bundle into files under `root`: the
// deletions are done by then, so a file may take a deleted directory's
// place. Each file goes through an AtomicFile: written whole or not at all.
class WritingSink : public BundleSink {
 public:
  WritingSink(const ChangeSet& index, fs::path root, FileSync sync)
      : index_(index), root_(std::move(root)), sync_(sync) {}

  absl::Status OnStart(const ChangeSet&) override { return absl::OkStatus(); }

  absl::Status OnEntry(const ChangeEntry& e, uint64_t) override {
    // The first read checked this bundle; a different one now is a caller's bug.
    if (next_ >= index_.entries.size() || index_.entries[next_++].path != e.path) {
      return absl::InternalError("the bundle changed between its two reads");
    }
    if (e.kind == EntryKind::kDeleted) return absl::OkStatus();
    RETURN_IF_ERROR(MakeParents(root_, e.path));
    const fs::path path = root_ / e.path;
    if (e.kind == EntryKind::kSymlink) return CreateSymlinkAtomically(path.string(), e.data);
    absl::StatusOr<AtomicFile> file =
        AtomicFile::Create(path.string(), static_cast<mode_t>(e.mode), sync_);
    if (!file.ok()) return file.status();
    file_.emplace(*std::move(file));
    return absl::OkStatus();
  }

  absl::Status OnData(std::string_view piece) override { return file_->Append(piece); }

  absl::Status OnEntryEnd() override {
    if (!file_.has_value()) return absl::OkStatus();
    absl::Status committed = file_->Commit();
    file_.reset();
    return committed;
  }

 private:
  const ChangeSet& index_;
  const fs::path root_;
  const FileSync sync_;
  size_t next_ = 0;
  std::optional<AtomicFile> file_;  // the file being written
};

// Applies the deletions, then streams the files, into `root`.
absl::Status ApplyInto(std::string_view bundle, const ChangeSet& index, const fs::path& root,
                       const UnpackOptions& options) {
  // Deletions first: a file may take the place of a deleted directory.
  for (const ChangeEntry& e : index.entries) {
    if (e.kind != EntryKind::kDeleted) continue;
    const fs::path path = root / e.path;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return LocalFileError(errno, StrCat("cannot delete ", path.string()));
    }
    PruneEmptyParents(root, e.path);
  }
  WritingSink sink(index, root, options.sync ? FileSync::kDurable : FileSync::kAtomicOnly);
  return ReadBundle(bundle, sink, options.limits);
}

// Where a result is built before it is moved to `to`: a random name beside
// `to` when `to` is missing, renamed onto it at the end; a random name
// inside it when it exists (it must be empty), its entries moved up.
struct Staging {
  fs::path dir;
  bool inside = false;
};

absl::StatusOr<fs::path> MakeRandomDirectory(const fs::path& beside) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    ASSIGN_OR_RETURN(const std::string dir, RandomTemporaryPathFor(beside.string()));
    if (mkdir(dir.c_str(), 0755) == 0) return fs::path(dir);
    if (errno != EEXIST) return LocalFileError(errno, StrCat("cannot create ", dir));
  }
  return absl::AlreadyExistsError(
      StrCat("cannot create a directory beside ", beside.string(), ": names all taken"));
}

absl::StatusOr<Staging> MakeStaging(const fs::path& to) {
  std::error_code error;
  if (!fs::exists(to, error)) {
    fs::create_directories(to.parent_path(), error);
    if (error) {
      return absl::InternalError(
          StrCat("cannot create ", to.parent_path().string(), ": ", error.message()));
    }
    ASSIGN_OR_RETURN(fs::path dir, MakeRandomDirectory(to));
    return Staging{.dir = std::move(dir), .inside = false};
  }
  // What a crashed unpack left inside is not the caller's content.
  for (const fs::directory_entry& entry : fs::directory_iterator(to, error)) {
    if (entry.path().filename().string().starts_with(kStagingPrefix)) {
      fs::remove_all(entry.path(), error);
    }
  }
  if (!fs::is_directory(to, error)) {
    return absl::FailedPreconditionError(StrCat(to.string(), " is not a directory"));
  }
  if (!fs::is_empty(to, error)) {
    return absl::FailedPreconditionError(
        StrCat(to.string(),
               " is not empty; unpack into a new or empty directory, or into the "
               "base directory itself"));
  }
  ASSIGN_OR_RETURN(fs::path dir, MakeRandomDirectory(to / kStagingName));
  return Staging{.dir = std::move(dir), .inside = true};
}

absl::Status CopyBase(const fs::path& base_dir, const fs::path& dir) {
  std::error_code error;
  fs::copy(base_dir, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
  if (error) {
    return absl::InternalError(
        StrCat("cannot copy ", base_dir.string(), " to ", dir.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

// Puts the finished result at `to`; on failure `to` is as it was before.
absl::Status MoveIntoPlace(const Staging& staging, const fs::path& to) {
  if (!staging.inside) {
    // RENAME_NOREPLACE: a directory made at `to` meanwhile is not replaced.
    if (renameat2(AT_FDCWD, staging.dir.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      return LocalFileError(errno, StrCat("cannot move the result to ", to.string()));
    }
    return absl::OkStatus();
  }
  std::vector<fs::path> moved;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(staging.dir, error)) {
    const fs::path target = to / entry.path().filename();
    if (rename(entry.path().c_str(), target.c_str()) != 0) {
      absl::Status failed =
          LocalFileError(errno, StrCat("cannot move the result into ", to.string()));
      for (const fs::path& done : moved) fs::remove_all(done, error);  // `to` was empty
      return failed;
    }
    moved.push_back(target);
  }
  if (error) {
    return absl::InternalError(StrCat("cannot list ", staging.dir.string(), ": ", error.message()));
  }
  rmdir(staging.dir.c_str());
  return absl::OkStatus();
}

// `status` with the staging directory's name replaced by the target's, so
// that a message names the path the person asked for.
absl::Status InTermsOf(const absl::Status& status, const fs::path& staging, const fs::path& to) {
  std::string message(status.message());
  const std::string from = staging.string();
  for (size_t at = message.find(from); at != std::string::npos;
       at = message.find(from, at + to.string().size())) {
    message.replace(at, from.size(), to.string());
  }
  return absl::Status(status.code(), StrCat(message, "; ", to.string(), " was left as it was"));
}

}  // namespace

absl::Status UnpackIndexed(std::string_view bundle, const ChangeSet& index,
                           const fs::path& base_dir, const fs::path& to_dir,
                           const UnpackOptions& options) {
  std::error_code error;
  if (!fs::is_directory(base_dir, error)) {
    return absl::NotFoundError(StrCat("the base directory ", base_dir.string(), " does not exist"));
  }
  RETURN_IF_ERROR(CheckBase(index, base_dir));
  fs::path to = fs::absolute(to_dir).lexically_normal();
  if (!to.has_filename()) to = to.parent_path();  // "dir/" names "dir"
  if (fs::exists(to, error) && fs::equivalent(base_dir, to, error)) {
    return ApplyInto(bundle, index, to, options);
  }
  ASSIGN_OR_RETURN(const Staging staging, MakeStaging(to));
  absl::Status status = CopyBase(base_dir, staging.dir);
  if (status.ok()) status = ApplyInto(bundle, index, staging.dir, options);
  if (status.ok()) status = MoveIntoPlace(staging, to);
  if (!status.ok()) {
    fs::remove_all(staging.dir, error);
    return InTermsOf(status, staging.dir, to);
  }
  return absl::OkStatus();
}

absl::Status Unpack(std::string_view bundle, const fs::path& base_dir, const fs::path& to_dir,
                    const UnpackOptions& options) {
  ASSIGN_OR_RETURN(const ChangeSet index, DecodeIndex(bundle, options.limits));
  return UnpackIndexed(bundle, index, base_dir, to_dir, options);
}

}  // namespace canhazgpu::changeset
