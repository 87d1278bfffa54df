// The simulated kubelet's stand-in for the part of a pod sandbox that
// names need: its /etc/hosts and its hostname. There is no container
// runtime and no network namespace (every pod shares the machine's
// loopback, where each has an address of its own: pod_network.h), so a
// container's process is started in a private mount namespace and UTS
// namespace of its own instead:
//   - as root: unshare(CLONE_NEWNS | CLONE_NEWUTS);
//   - as anyone else, or as root without CAP_SYS_ADMIN: with a user
//     namespace too, mapping only the caller's uid and gid to themselves
//     (setgroups denied), so the process keeps its identity and loses the
//     namespace's capabilities at exec;
// then every mount is made private (MS_REC | MS_PRIVATE on /, so nothing
// propagates back to the machine), the pod's hosts file is bind-mounted
// over /etc/hosts, and the hostname is set. The bind mount pins the file's
// inode: whoever keeps the file current rewrites it in place (glibc reads
// /etc/hosts again on every lookup, so a later line is seen at once).
// Where the machine allows no such namespaces (a container without
// CAP_SYS_ADMIN, user namespaces switched off), CheckPrivateNamespaces
// says why and the caller runs pods without a sandbox.
//
// Thread-safe; EnterInChild only makes system calls, as it must between
// fork and exec in a threaded process.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace canhazgpu::simkubelet {

struct PodSandbox {
  std::string hosts_file;  // bind-mounted over /etc/hosts; "" = no sandbox
  std::string hostname;    // the UTS hostname; "" = the machine's
  bool empty() const { return hosts_file.empty(); }
};

// A sandbox prepared in the parent, so that entering it in the child
// needs no allocation.
class SandboxEntry {
 public:
  explicit SandboxEntry(const PodSandbox& sandbox);
  // In the child between fork and exec: 0, or the errno of the step that
  // failed, named in *step.
  int EnterInChild(const char** step) const;

 private:
  PodSandbox sandbox_;
  bool as_root_;
  std::string uid_map_;  // "<uid> <uid> 1"
  std::string gid_map_;
};

// Whether processes can be started in a PodSandbox here: a child enters
// one (with /etc/hosts bound over itself) and exits. FailedPrecondition
// naming the step and the system's reason otherwise.
absl::Status CheckPrivateNamespaces();

}  // namespace canhazgpu::simkubelet
