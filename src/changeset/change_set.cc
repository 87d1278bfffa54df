#include "changeset/change_set.h"

#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "changeset/blob_id.h"
#include "changeset/disk_files.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "git/git.h"

namespace canhazgpu::changeset {
namespace {

// What the base tree holds at a path, as far as a change set cares.
struct BaseState {
  bool present = false;
  git_oid id{};
  git_filemode_t mode = GIT_FILEMODE_UNREADABLE;
};

absl::StatusOr<BaseState> BaseAt(git_tree* tree, const std::string& path) {
  git_tree_entry* raw = nullptr;
  int code = git_tree_entry_bypath(&raw, tree, path.c_str());
  if (code == GIT_ENOTFOUND) return BaseState{};
  if (code < 0) return git::Error(code, StrCat("looking up ", path, " in the base tree"));
  git::TreeEntry entry(raw);
  // A directory in the base is no blob at this path; its files are entries
  // of their own.
  if (git_tree_entry_type(entry.get()) == GIT_OBJECT_TREE) return BaseState{};
  return BaseState{.present = true,
                   .id = *git_tree_entry_id(entry.get()),
                   .mode = git_tree_entry_filemode(entry.get())};
}

// The entry for `path`, or nullopt when the disk holds what the base holds
// (a file touched without a change, or staged and then restored).
absl::StatusOr<std::optional<ChangeEntry>> EntryFor(const std::filesystem::path& top,
                                                    const std::string& path, const BaseState& base,
                                                    std::vector<std::string>& notes) {
  ChangeEntry entry{.path = path};
  if (base.present) entry.base_blob = base.id;
  const std::filesystem::path on_disk = top / path;
  struct stat st;
  if (lstat(on_disk.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      return absl::InternalError(StrCat("reading ", on_disk.string(), ": ", std::strerror(errno)));
    }
    if (!base.present) return std::nullopt;
    entry.kind = EntryKind::kDeleted;
    return entry;
  }
  git_filemode_t disk_mode;
  if (S_ISLNK(st.st_mode)) {
    ASSIGN_OR_RETURN(entry.data, ReadSymlinkTarget(on_disk));
    entry.kind = EntryKind::kSymlink;
    disk_mode = GIT_FILEMODE_LINK;
  } else if (S_ISREG(st.st_mode)) {
    ASSIGN_OR_RETURN(entry.data, ReadWholeFile(on_disk, static_cast<uint64_t>(st.st_size)));
    entry.kind = EntryKind::kFile;
    const bool executable = (st.st_mode & S_IXUSR) != 0;  // git's rule
    entry.mode = executable ? 0755 : 0644;
    disk_mode = executable ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
  } else if (S_ISDIR(st.st_mode) && base.present) {
    // The base's file became a directory; the files in it are entries of
    // their own.
    entry.kind = EntryKind::kDeleted;
    return entry;
  } else {
    notes.push_back(
        StrCat(path, " skipped: a directory where git sees a file ", "(a nested repository?)"));
    return std::nullopt;
  }
  if (base.present && base.mode == disk_mode) {
    const git_oid now = BlobIdOf(entry.data);
    if (git_oid_equal(&now, &base.id)) return std::nullopt;
  }
  return entry;
}

}  // namespace

absl::StatusOr<ChangeSet> CollectChangeSet(const std::filesystem::path& work_tree,
                                           const std::string& base_commit) {
  ASSIGN_OR_RETURN(git::Repository repo, git::Open(work_tree));
  ASSIGN_OR_RETURN(git_oid base_oid, git::ParseOid(base_commit));
  git_commit* raw_commit = nullptr;
  int code = git_commit_lookup(&raw_commit, repo.get(), &base_oid);
  if (code < 0) return git::Error(code, StrCat("looking up the base commit ", base_commit));
  git::Commit commit(raw_commit);
  git_tree* raw_tree = nullptr;
  code = git_commit_tree(&raw_tree, commit.get());
  if (code < 0) return git::Error(code, StrCat("reading the tree of ", base_commit));
  git::Tree tree(raw_tree);

  // The diff only nominates paths: what each one becomes is read from the
  // disk below, so no stat-cache or index subtlety can change the bytes.
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  options.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
                  GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_SKIP_BINARY_CHECK;
  // Otherwise a submodule without a .gitmodules entry is left out silently,
  // where it must be named in a note.
  options.ignore_submodules = GIT_SUBMODULE_IGNORE_NONE;
  git_diff* raw_diff = nullptr;
  code = git_diff_tree_to_workdir_with_index(&raw_diff, repo.get(), tree.get(), &options);
  if (code < 0) return git::Error(code, "comparing the base commit with the work tree");
  git::Diff diff(raw_diff);

  ChangeSet out{.base_commit = git::ToHex(base_oid)};
  std::set<std::string> paths;
  std::set<std::string> submodules;
  const size_t count = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < count; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(diff.get(), i);
    for (const git_diff_file* file : {&delta->old_file, &delta->new_file}) {
      if (file->path == nullptr) continue;
      std::string path = file->path;
      if (file->mode == GIT_FILEMODE_COMMIT) {
        submodules.insert(path);
      } else if (path.ends_with('/')) {
        // An untracked directory libgit2 did not enter: another repository.
        out.notes.push_back(StrCat(path, " skipped: it holds another git repository"));
      } else {
        paths.insert(std::move(path));
      }
    }
  }
  // libgit2 leaves out a submodule it cannot look up (no .gitmodules
  // entry); the index still names it.
  git_index* raw_index = nullptr;
  code = git_repository_index(&raw_index, repo.get());
  if (code < 0) return git::Error(code, "reading the index");
  git::Index index(raw_index);
  for (size_t i = 0; i < git_index_entrycount(index.get()); ++i) {
    const git_index_entry* entry = git_index_get_byindex(index.get(), i);
    if (entry->mode == GIT_FILEMODE_COMMIT) submodules.insert(entry->path);
  }
  for (const std::string& path : submodules) {
    paths.erase(path);
    out.notes.push_back(StrCat("submodule ", path, " skipped: submodules are not packed"));
  }
  const std::filesystem::path top(git_repository_workdir(repo.get()));
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(BaseState base, BaseAt(tree.get(), path));
    ASSIGN_OR_RETURN(std::optional<ChangeEntry> entry, EntryFor(top, path, base, out.notes));
    if (entry.has_value()) out.entries.push_back(*std::move(entry));
  }
  return out;  // std::set kept the paths sorted
}

Summary Summarize(const ChangeSet& change_set) {
  Summary summary{.base_commit = change_set.base_commit, .notes = change_set.notes};
  std::vector<Contributor> sizes;
  for (const ChangeEntry& e : change_set.entries) {
    if (e.kind == EntryKind::kDeleted) {
      ++summary.deleted;
      continue;
    }
    ++(e.base_blob.has_value() ? summary.modified : summary.added);
    if (e.kind == EntryKind::kSymlink) ++summary.symlinks;
    summary.bytes += e.data.size();
    sizes.push_back({e.path, e.data.size()});
  }
  const size_t shown = std::min<size_t>(sizes.size(), kBiggestShown);
  std::partial_sort(sizes.begin(), sizes.begin() + shown, sizes.end(),
                    [](const Contributor& a, const Contributor& b) {
                      return a.bytes != b.bytes ? a.bytes > b.bytes : a.path < b.path;
                    });
  summary.biggest.assign(sizes.begin(), sizes.begin() + shown);
  return summary;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

std::string FormatSummary(const Summary& summary) {
  std::string out = StrCat("merge-base ", summary.base_commit, "\n");
  out += StrCat(summary.added, " added, ", summary.modified, " modified, ", summary.deleted,
                " deleted");
  if (summary.symlinks > 0) {
    out += StrCat(" (", summary.symlinks, summary.symlinks == 1 ? " symlink)" : " symlinks)");
  }
  out += StrCat("; ", FormatBytes(summary.bytes), " of file content\n");
  if (!summary.biggest.empty()) {
    out += "biggest:\n";
    for (const Contributor& c : summary.biggest) {
      out += StrCat("  ", c.path, "  ", FormatBytes(c.bytes), "\n");
    }
  }
  for (const std::string& note : summary.notes) out += StrCat("note: ", note, "\n");
  return out;
}

std::vector<std::string> TouchesCompiledCode(const ChangeSet& change_set) {
  static const char* const kSourceExtensions[] = {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"};
  std::vector<std::string> out;
  for (const ChangeEntry& e : change_set.entries) {
    const std::filesystem::path path(e.path);
    const std::string name = path.filename().string();
    const std::string extension = path.extension().string();
    bool compiled = e.path.starts_with("csrc/") || e.path.starts_with("cmake/") ||
                    name == "CMakeLists.txt" || e.path == "setup.py";
    for (const char* source : kSourceExtensions) compiled = compiled || extension == source;
    if (compiled) out.push_back(e.path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace canhazgpu::changeset
