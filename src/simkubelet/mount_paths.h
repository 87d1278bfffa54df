// The simulated kubelet's stand-in for a container's mount namespace. There
// is no container runtime: a container is a local process that sees the
// node's own filesystem, so a volume mounted at /workspace cannot appear at
// /workspace. Instead the kubelet rewrites the paths the container is
// given: in every argv word and every env value (after $(VAR) expansion), a
// mountPath that occurs as a path prefix becomes the directory the volume
// was materialised in (pod_volumes.h). "As a path prefix" means: at the
// start of the string or after one of  ' " = :  (a space, quotes, an
// assignment, a PATH-like list), and followed by the end of the string, a
// '/', or one of  ' " : ;  — so `'/workspace'/vllm/.` inside a shell
// script, `HF_HUB_CACHE=/cache/hf` and `--to /workspace` all reach the
// volumes, while /workspace2 or /cachex do not. The longest mountPath wins
// where two could match. Paths a program builds at run time (or reads from
// a file) are not rewritten; readOnly mounts cannot be enforced.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace canhazgpu::simkubelet {

// One volumeMount of a container: where the container expects it, and the
// node path that stands in for it.
struct MountPoint {
  std::string mount_path;  // "/workspace" (a trailing '/' is ignored)
  std::string host_path;   // "<pods_dir>/ml_p_<uid>/volumes/workspace"
};

// `text` with every mountPath occurring as a path prefix replaced by its
// host path. A mountPath of "/" is never rewritten (it would be every path).
std::string RewriteMountPaths(std::string_view text, const std::vector<MountPoint>& mounts);

// The same for each "NAME=value" entry's value (names stay as they are).
void RewriteEnvironment(std::vector<std::string>& env, const std::vector<MountPoint>& mounts);

// Where a container with `working_dir` (its spec's workingDir; "" when
// unset) starts, given its own fresh directory `container_dir` (the
// stand-in for its root filesystem): unset, `container_dir`; inside a
// volume, that volume's directory; anywhere else, the same path under
// `container_dir`. The caller creates it when missing, as runtimes do.
std::string WorkingDirectory(std::string_view working_dir, const std::vector<MountPoint>& mounts,
                             std::string_view container_dir);

}  // namespace canhazgpu::simkubelet
