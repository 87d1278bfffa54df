#include "changeset/directory_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "changeset/disk_files.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

namespace fs = std::filesystem;

// The ignore rules of the git work tree a directory is in: .gitignore
// files, .git/info/exclude and core.excludesFile, as `git status` applies
// them, except that a tracked path is never ignored.
class IgnoreRules {
 public:
  // No rules when `dir` is in no work tree (or a bare repository).
  static absl::StatusOr<IgnoreRules> For(const fs::path& dir);

  bool active() const { return repo_ != nullptr; }
  const fs::path& top() const { return top_; }
  // `relative` to the directory, '/'-separated.
  bool IsIgnored(const std::string& relative, bool directory) const;

 private:
  git::Repository repo_;
  git::Index index_;
  fs::path top_;
  std::string prefix_;  // the directory relative to the top: "" or "sub/dir/"
};

absl::StatusOr<IgnoreRules> IgnoreRules::For(const fs::path& dir) {
  IgnoreRules rules;
  absl::StatusOr<git::Repository> repo = git::Discover(dir);
  if (absl::IsNotFound(repo.status())) return rules;
  if (!repo.ok()) return repo.status();
  const char* workdir = git_repository_workdir(repo->get());
  if (workdir == nullptr) return rules;  // bare: no work tree to ignore in
  std::error_code error;
  const fs::path top = fs::canonical(workdir, error);
  const fs::path here = fs::canonical(dir, error);
  if (error) return absl::NotFoundError(StrCat(dir.string(), ": ", error.message()));
  const fs::path relative = here.lexically_relative(top);
  if (relative.empty() || *relative.begin() == "..") return rules;  // inside .git, say
  git_index* raw_index = nullptr;
  if (int code = git_repository_index(&raw_index, repo->get()); code < 0) {
    return git::Error(code, "reading the index");
  }
  rules.index_.reset(raw_index);
  rules.repo_ = *std::move(repo);
  rules.top_ = top;
  if (relative != ".") rules.prefix_ = relative.generic_string() + "/";
  return rules;
}

bool IgnoreRules::IsIgnored(const std::string& relative, bool directory) const {
  if (!active()) return false;
  const std::string path = prefix_ + relative;
  int ignored = 0;
  if (git_ignore_path_is_ignored(&ignored, repo_.get(), path.c_str()) < 0 || ignored == 0) {
    return false;
  }
  if (directory) {
    // An ignored directory holding tracked files is entered: git ships
    // what it tracks.
    size_t at = 0;
    return git_index_find_prefix(&at, index_.get(), (path + "/").c_str()) != 0;
  }
  return git_index_get_bypath(index_.get(), path.c_str(), 0) == nullptr;
}

// A path the walk keeps, before its contents are read.
struct Found {
  std::string path;
  EntryKind kind = EntryKind::kFile;
  uint64_t size = 0;
  uint32_t mode = 0644;
};

bool BiggerFirst(const Contributor& a, const Contributor& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.path < b.path;
}

std::string BiggestText(std::vector<Contributor> files) {
  std::sort(files.begin(), files.end(), BiggerFirst);
  if (files.size() > static_cast<size_t>(kBiggestShown)) files.resize(kBiggestShown);
  std::vector<std::string> shown;
  for (const Contributor& c : files) shown.push_back(StrCat(c.path, " ", FormatBytes(c.bytes)));
  return Join(shown, ", ");
}

// Whether the symlink at `path` (relative, '/'-separated) points out of
// the directory: an absolute target, or one whose ".." climb above it.
bool PointsOutside(const std::string& path, const std::string& target) {
  if (target.starts_with('/')) return true;
  const fs::path resolved = (fs::path(path).parent_path() / target).lexically_normal();
  return !resolved.empty() && *resolved.begin() == "..";
}

class Walker {
 public:
  Walker(const fs::path& root, const IgnoreRules& rules, const DirectoryOptions& options,
         DirectoryFiles& out)
      : root_(root), rules_(rules), options_(options), out_(out) {}

  absl::Status Walk(const fs::path& dir, const std::string& prefix);
  std::vector<Found>& found() { return found_; }
  uint64_t total() const { return total_; }

 private:
  absl::Status Visit(const fs::path& path, const std::string& relative);
  absl::Status Keep(Found found);

  const fs::path& root_;
  const IgnoreRules& rules_;
  const DirectoryOptions& options_;
  DirectoryFiles& out_;
  std::vector<Found> found_;
  uint64_t total_ = 0;
};

absl::Status Walker::Walk(const fs::path& dir, const std::string& prefix) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) {
    return absl::PermissionDeniedError(StrCat("reading ", dir.string(), ": ", error.message()));
  }
  for (; it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name == ".git") {
      ++out_.git_dirs;
      continue;
    }
    RETURN_IF_ERROR(Visit(it->path(), prefix + name));
  }
  if (error) return absl::InternalError(StrCat("reading ", dir.string(), ": ", error.message()));
  return absl::OkStatus();
}

absl::Status Walker::Visit(const fs::path& path, const std::string& relative) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();  // removed while walking
    return absl::InternalError(StrCat("reading ", path.string(), ": ", std::strerror(errno)));
  }
  const bool directory = S_ISDIR(st.st_mode);
  if ((directory || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
      rules_.IsIgnored(relative, directory)) {
    ++out_.ignored;
    return absl::OkStatus();
  }
  if (directory) {
    struct stat git_entry;
    if (rules_.active() && lstat((path / ".git").c_str(), &git_entry) == 0) {
      // A submodule or a nested repository: git does not enter it either.
      ++out_.nested_repos;
      out_.change_set.notes.push_back(
          StrCat(relative, "/ skipped: it holds another git repository"));
      return absl::OkStatus();
    }
    return Walk(path, relative + "/");
  }
  if (S_ISLNK(st.st_mode)) {
    return Keep({.path = relative, .kind = EntryKind::kSymlink, .size = 0, .mode = 0});
  }
  if (!S_ISREG(st.st_mode)) {
    ++out_.special;
    return absl::OkStatus();
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > options_.max_file_size) {
    ++out_.too_big;
    out_.biggest_left_out.push_back({relative, size});
    std::sort(out_.biggest_left_out.begin(), out_.biggest_left_out.end(), BiggerFirst);
    if (out_.biggest_left_out.size() > static_cast<size_t>(kBiggestShown)) {
      out_.biggest_left_out.pop_back();
    }
    return absl::OkStatus();
  }
  const uint32_t mode = (st.st_mode & S_IXUSR) != 0 ? 0755 : 0644;  // git's rule
  return Keep({.path = relative, .kind = EntryKind::kFile, .size = size, .mode = mode});
}

absl::Status Walker::Keep(Found found) {
  total_ += found.size;
  found_.push_back(std::move(found));
  if (found_.size() > options_.max_files) {
    return absl::ResourceExhaustedError(
        StrCat(root_.string(), " holds more than ", options_.max_files,
               " files to ship (the walk stopped there); add what is not code to .gitignore or "
               "run from the project's own directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ChangeEntry> ReadEntry(const fs::path& root, const Found& found) {
  ChangeEntry entry{.path = found.path, .kind = found.kind, .mode = found.mode};
  const fs::path path = root / found.path;
  if (found.kind == EntryKind::kSymlink) {
    ASSIGN_OR_RETURN(entry.data, ReadSymlinkTarget(path));
  } else {
    ASSIGN_OR_RETURN(entry.data, ReadWholeFile(path, found.size));
  }
  return entry;
}

}  // namespace

absl::StatusOr<DirectoryFiles> CollectDirectory(const fs::path& dir,
                                                const DirectoryOptions& options) {
  ASSIGN_OR_RETURN(IgnoreRules rules, IgnoreRules::For(dir));
  DirectoryFiles out;
  out.change_set.base_commit = kNoBaseCommit;
  out.git_top = rules.top();
  Walker walker(dir, rules, options, out);
  RETURN_IF_ERROR(walker.Walk(dir, ""));
  std::vector<Found>& found = walker.found();
  if (walker.total() > options.max_total_size) {
    std::vector<Contributor> sizes;
    for (const Found& f : found) sizes.push_back({f.path, f.size});
    return absl::ResourceExhaustedError(
        StrCat(dir.string(), " holds ", FormatBytes(walker.total()), " to ship, over the ",
               FormatBytes(options.max_total_size), " read limit; biggest: ", BiggestText(sizes)));
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.path < b.path; });
  for (const Found& f : found) {
    absl::StatusOr<ChangeEntry> entry = ReadEntry(dir, f);
    if (absl::IsNotFound(entry.status())) {
      ++out.vanished;
      continue;
    }
    if (!entry.ok()) return entry.status();
    if (entry->kind == EntryKind::kSymlink && PointsOutside(entry->path, entry->data)) {
      out.outward_links.push_back(entry->path);
    }
    out.change_set.entries.push_back(*std::move(entry));
  }
  std::sort(out.change_set.notes.begin(), out.change_set.notes.end());
  return out;
}

}  // namespace canhazgpu::changeset
