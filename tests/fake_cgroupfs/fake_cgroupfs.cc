// An LD_PRELOAD stand-in for cgroupfs, for tests of `canhazgpu run`'s dmem
// limits on machines without cgroup v2's dmem controller (docs/sharing.md).
//
// Why a preload and not files a test writes: the kernel makes a cgroup's
// interface files in the same mkdir(2) that makes its directory, and
// canhazgpu writes them right after. A test thread that added them on an
// inotify event would race that write; wrapping mkdir and rmdir makes the
// plain directories under $FAKE_CGROUPFS_ROOT behave as cgroups do, exactly
// where canhazgpu relies on it:
//
//   mkdir  a new directory below the root gets an empty cgroup.procs, and a
//          dmem.max when its parent's cgroup.subtree_control lists "dmem"
//          (the kernel gives a child the controllers its parent enables);
//          $FAKE_CGROUPFS_NO_DMEM_MAX withholds dmem.max (a controller that
//          went away) for tests of that failure;
//   rmdir  fails with EBUSY while a live process is listed in cgroup.procs;
//          otherwise removes those interface files, then the directory.
//
// Nothing is moved: a pid written to cgroup.procs is only recorded. Outside
// the root both calls are the real ones.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr const char* kInterfaceFiles[] = {"cgroup.procs", "dmem.max"};

bool BelowFakeRoot(const char* path) {
  const char* root = std::getenv("FAKE_CGROUPFS_ROOT");
  if (root == nullptr || *root == '\0' || path == nullptr) return false;
  const std::string prefix = std::string(root) + "/";
  return std::string(path).rfind(prefix, 0) == 0;
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void CreateEmpty(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
}

bool ListsDmem(const std::string& subtree_control) {
  std::istringstream words(ReadText(subtree_control));
  for (std::string word; words >> word;) {
    if (word == "dmem") return true;
  }
  return false;
}

bool Alive(const std::string& pid) {
  std::string stat = ReadText("/proc/" + pid + "/stat");
  size_t close_paren = stat.rfind(')');
  if (stat.empty() || close_paren == std::string::npos || close_paren + 2 >= stat.size()) {
    return false;
  }
  return stat[close_paren + 2] != 'Z' && stat[close_paren + 2] != 'X';
}

bool HasLiveProcess(const std::string& dir) {
  std::istringstream pids(ReadText(dir + "/cgroup.procs"));
  for (std::string pid; pids >> pid;) {
    if (Alive(pid)) return true;
  }
  return false;
}

}  // namespace

extern "C" int mkdir(const char* path, mode_t mode) noexcept {
  using Mkdir = int (*)(const char*, mode_t);
  static Mkdir real = reinterpret_cast<Mkdir>(dlsym(RTLD_NEXT, "mkdir"));
  int rc = real(path, mode);
  if (rc != 0 || !BelowFakeRoot(path)) return rc;
  const int saved = errno;
  const std::string dir(path);
  CreateEmpty(dir + "/cgroup.procs");
  if (ListsDmem(ParentOf(dir) + "/cgroup.subtree_control") &&
      std::getenv("FAKE_CGROUPFS_NO_DMEM_MAX") == nullptr) {
    CreateEmpty(dir + "/dmem.max");
  }
  errno = saved;
  return rc;
}

extern "C" int rmdir(const char* path) noexcept {
  using Rmdir = int (*)(const char*);
  static Rmdir real = reinterpret_cast<Rmdir>(dlsym(RTLD_NEXT, "rmdir"));
  if (BelowFakeRoot(path)) {
    const std::string dir(path);
    if (HasLiveProcess(dir)) {
      errno = EBUSY;
      return -1;
    }
    for (const char* name : kInterfaceFiles) unlink((dir + "/" + name).c_str());
  }
  return real(path);
}
