#include "changeset/unpack.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

#include "changeset/blob_id.h"
#include "changeset/bundle.h"
#include "changeset/disk_files.h"
#include "core/file_write.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

namespace fs = std::filesystem;

constexpr size_t kRejectedShown = 20;

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

absl::Status CopyBase(const fs::path& base_dir, const fs::path& to_dir) {
  std::error_code error;
  if (fs::exists(to_dir, error) && !fs::is_empty(to_dir, error)) {
    return absl::FailedPreconditionError(
        StrCat(to_dir.string(),
               " is not empty; unpack into a new or empty directory, or into the "
               "base directory itself"));
  }
  fs::create_directories(to_dir, error);
  if (error) {
    return absl::InternalError(StrCat("creating ", to_dir.string(), ": ", error.message()));
  }
  fs::copy(base_dir, to_dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks, error);
  if (error) {
    return absl::InternalError(
        StrCat("copying ", base_dir.string(), " to ", to_dir.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Apply(const ChangeSet& change_set, const fs::path& base_dir, const fs::path& to_dir,
                   const UnpackOptions& options) {
  std::error_code error;
  if (!fs::is_directory(base_dir, error)) {
    return absl::NotFoundError(StrCat("the base directory ", base_dir.string(), " does not exist"));
  }
  RETURN_IF_ERROR(CheckBase(change_set, base_dir));
  const bool in_place = fs::exists(to_dir, error) && fs::equivalent(base_dir, to_dir, error);
  if (!in_place) RETURN_IF_ERROR(CopyBase(base_dir, to_dir));
  const fs::path root = fs::absolute(to_dir).lexically_normal();

  // Deletions first: a file may take the place of a deleted directory.
  for (const ChangeEntry& e : change_set.entries) {
    if (e.kind != EntryKind::kDeleted) continue;
    const fs::path path = root / e.path;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(StrCat("deleting ", path.string(), ": ", std::strerror(errno)));
    }
    PruneEmptyParents(root, e.path);
  }
  for (const ChangeEntry& e : change_set.entries) {
    if (e.kind == EntryKind::kDeleted) continue;
    RETURN_IF_ERROR(MakeParents(root, e.path));
    const fs::path path = root / e.path;
    if (e.kind == EntryKind::kFile) {
      RETURN_IF_ERROR(
          WriteFileAtomically(path.string(), e.data, static_cast<mode_t>(e.mode),
                              options.sync ? FileSync::kDurable : FileSync::kAtomicOnly));
    } else {
      RETURN_IF_ERROR(CreateSymlinkAtomically(path, e.data));
    }
  }
  return absl::OkStatus();
}

absl::Status Unpack(std::string_view bundle, const fs::path& base_dir, const fs::path& to_dir,
                    const UnpackOptions& options) {
  ASSIGN_OR_RETURN(ChangeSet change_set, Decode(bundle));
  return Apply(change_set, base_dir, to_dir, options);
}

}  // namespace canhazgpu::changeset
