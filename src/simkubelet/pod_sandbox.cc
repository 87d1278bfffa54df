#include "simkubelet/pod_sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/strings.h"

namespace canhazgpu::simkubelet {
namespace {

// Writes `text` to the /proc file `path` (a uid or gid map): 0 or errno.
int WriteProcFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

}  // namespace

SandboxEntry::SandboxEntry(const PodSandbox& sandbox)
    : sandbox_(sandbox),
      as_root_(::geteuid() == 0),
      uid_map_(StrCat(::geteuid(), " ", ::geteuid(), " 1")),
      gid_map_(StrCat(::getegid(), " ", ::getegid(), " 1")) {}

int SandboxEntry::EnterInChild(const char** step) const {
  if (sandbox_.empty()) return 0;
  *step = "unshare";
  constexpr int kFlags = CLONE_NEWNS | CLONE_NEWUTS;
  // Root without CAP_SYS_ADMIN (a container's) may still own a user
  // namespace.
  bool with_user = !as_root_;
  if (as_root_ && ::unshare(kFlags) != 0) {
    if (errno != EPERM) return errno;
    with_user = true;
  }
  if (with_user) {
    if (::unshare(kFlags | CLONE_NEWUSER) != 0) return errno;
    *step = "deny setgroups";
    if (int err = WriteProcFile("/proc/self/setgroups", "deny"); err != 0) return err;
    *step = "map the user";
    if (int err = WriteProcFile("/proc/self/uid_map", uid_map_); err != 0) return err;
    *step = "map the group";
    if (int err = WriteProcFile("/proc/self/gid_map", gid_map_); err != 0) return err;
  }
  *step = "make the mounts private";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  *step = "bind the pod's hosts file over /etc/hosts";
  if (::mount(sandbox_.hosts_file.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    return errno;
  }
  if (!sandbox_.hostname.empty()) {
    *step = "set the hostname";
    if (::sethostname(sandbox_.hostname.data(), sandbox_.hostname.size()) != 0) return errno;
  }
  return 0;
}

absl::Status CheckPrivateNamespaces() {
  const SandboxEntry entry({.hosts_file = "/etc/hosts", .hostname = "sandbox-probe"});
  struct Failure {
    int err = 0;
    const char* step = "";  // a literal: the same address in parent and child
  };
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Failure failure;
    failure.err = entry.EnterInChild(&failure.step);
    if (failure.err != 0) (void)!::write(fds[1], &failure, sizeof(failure));
    ::_exit(failure.err == 0 ? 0 : 1);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return absl::InternalError(StrCat("fork: ", std::strerror(errno)));
  }
  Failure failure;
  ssize_t n;
  do {
    n = ::read(fds[0], &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    return absl::FailedPreconditionError(StrCat(failure.step, ": ", std::strerror(failure.err)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError("the namespace probe did not exit cleanly");
  }
  return absl::OkStatus();
}

}  // namespace canhazgpu::simkubelet
