// Test and benchmark support: real git repositories made with the `git`
// command, an independent implementation to check ours against (product
// code never runs it), and tree comparison for the round-trip tests.
//
// Thread safety: none; one test thread.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace canhazgpu::changeset::testing {

namespace fs = std::filesystem;

// Runs `sh -c command` and returns its stdout; throws with the output on a
// non-zero exit, which fails the calling test.
inline std::string Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) throw std::runtime_error("command failed: " + command + "\n" + out);
  return out;
}

inline std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// `git -C dir ARGS`, with an identity and no user or system configuration.
inline std::string Git(const fs::path& dir, const std::string& args) {
  return Shell("GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C " + Quote(dir.string()) +
               " -c user.name=Test -c user.email=test@example.com -c init.defaultBranch=main "
               "-c commit.gpgsign=false -c core.autocrlf=false " +
               args);
}
inline std::string GitLine(const fs::path& dir, const std::string& args) {
  std::string out = Git(dir, args);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

inline void WriteBytes(const fs::path& path, const std::string& bytes, mode_t mode = 0644) {
  fs::create_directories(path.parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  chmod(path.c_str(), mode);
}

inline std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A vLLM-shaped upstream (a bare repository at ROOT/vllm-project/vllm.git
// with a main branch) and a developer's clone of it at ROOT/work, whose
// remote for the upstream is named `remote`.
struct FakeVllm {
  fs::path root;
  fs::path upstream;
  fs::path work;
};

// `files` extra files (path -> content) go into the upstream's first commit.
inline FakeVllm MakeFakeVllm(const fs::path& root, const std::string& remote = "up",
                             const std::map<std::string, std::string>& files = {}) {
  FakeVllm v{root, root / "vllm-project" / "vllm.git", root / "work"};
  const fs::path seed = root / "seed";
  fs::create_directories(seed);
  Git(seed, "init -q");
  WriteBytes(seed / "vllm" / "__init__.py", "__version__ = \"0.0.0\"\n");
  WriteBytes(seed / "setup.py", "from setuptools import setup\nsetup(name=\"vllm\")\n");
  WriteBytes(seed / "README.md", "# vLLM\n");
  for (const auto& [path, content] : files) WriteBytes(seed / path, content);
  Git(seed, "add -A");
  Git(seed, "commit -q -m base");
  fs::create_directories(v.upstream.parent_path());
  Git(root, "clone -q --bare " + Quote(seed.string()) + " " + Quote(v.upstream.string()));
  Git(root,
      "clone -q -o " + remote + " " + Quote(v.upstream.string()) + " " + Quote(v.work.string()));
  fs::remove_all(seed);
  return v;
}

// Every file and symlink under `dir` (not .git, not `skip`), as
// "f 0755 <bytes>" or "l <target>", by relative path.
inline std::map<std::string, std::string> Snapshot(const fs::path& dir,
                                                   const std::set<std::string>& skip = {}) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string relative = it->path().lexically_relative(dir).string();
    if (relative == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (skip.contains(relative)) continue;
    struct stat st;
    lstat(it->path().c_str(), &st);
    if (S_ISLNK(st.st_mode)) {
      out[relative] = "l " + fs::read_symlink(it->path()).string();
    } else if (S_ISREG(st.st_mode)) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
      out[relative] = std::string("f ") + mode + " " + ReadBytes(it->path());
    }
  }
  return out;
}

}  // namespace canhazgpu::changeset::testing
