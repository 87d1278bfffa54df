#include "git/testing/test_repo.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "git/testing/command.h"

namespace canhazgpu::git::testing {

namespace fs = std::filesystem;

ScopedTempDir::ScopedTempDir(const std::string& label) {
  std::string pattern = (fs::temp_directory_path() / (label + "_XXXXXX")).string();
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

void WriteFile(const fs::path& path, const std::string& contents, bool executable) {
  fs::create_directories(path.parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << contents;
  }
  fs::permissions(path, executable ? fs::perms(0755) : fs::perms(0644), fs::perm_options::replace);
}

void InitWorkTree(const fs::path& dir) {
  fs::create_directories(dir);
  Git(dir, {"init", "-q", "."});
}

void InitBare(const fs::path& dir) {
  fs::create_directories(dir);
  Git(dir, {"init", "-q", "--bare", "."});
}

std::string CommitAll(const fs::path& work, const std::string& message) {
  Git(work, {"add", "-A"});
  Git(work, {"commit", "-q", "--allow-empty", "-m", message});
  std::string head = Git(work, {"rev-parse", "HEAD"});
  while (!head.empty() && head.back() == '\n') head.pop_back();
  return head;
}

std::map<std::string, Entry> Snapshot(const fs::path& dir) {
  std::map<std::string, Entry> entries;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    // lexically: fs::relative would resolve symbolic links.
    const std::string relative = it->path().lexically_relative(dir).generic_string();
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    Entry entry;
    if (S_ISLNK(st.st_mode)) {
      entry.kind = 'l';
      entry.data = fs::read_symlink(it->path()).string();
    } else if (S_ISDIR(st.st_mode)) {
      entry.kind = 'd';
      entry.mode = st.st_mode & 07777;
    } else {
      entry.kind = 'f';
      entry.mode = st.st_mode & 07777;
      std::ifstream in(it->path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      entry.data = text.str();
    }
    entries[relative] = std::move(entry);
  }
  return entries;
}

}  // namespace canhazgpu::git::testing
