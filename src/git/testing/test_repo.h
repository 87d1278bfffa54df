// Test-only: building repositories with the `git` command and comparing
// directory trees, for the git module's tests and benchmark and for the
// node cache agent's tests.
//
// Thread safety: plain functions on the paths given; no shared state.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>

namespace canhazgpu::git::testing {

// A fresh directory under the system temp directory, removed with the object.
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& label);
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes `contents` to `path` (parents created) with mode 0755 or 0644.
void WriteFile(const std::filesystem::path& path, const std::string& contents,
               bool executable = false);

// `git init` of a work tree at `dir` (branch main).
void InitWorkTree(const std::filesystem::path& dir);
// `git init --bare` at `dir`.
void InitBare(const std::filesystem::path& dir);
// Stages everything in the work tree and commits; returns the commit id.
std::string CommitAll(const std::filesystem::path& work, const std::string& message);

// What a directory holds, for equality checks: for every path under it
// (relative, '/'-separated) the kind, the permission bits and the bytes
// (files) or target (links). Directories are listed too.
struct Entry {
  char kind = '?';  // 'f' file, 'l' symlink, 'd' directory
  mode_t mode = 0;  // permission bits (0 for links)
  std::string data;

  bool operator==(const Entry& other) const = default;
};
std::map<std::string, Entry> Snapshot(const std::filesystem::path& dir);

}  // namespace canhazgpu::git::testing
