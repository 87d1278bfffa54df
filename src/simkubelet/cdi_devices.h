// CDI device resolution as a container runtime does it (containerd and
// CRI-O through the container-device-interface library): the fully
// qualified ids a DRA driver returned from NodePrepareResources
// ("vendor/class=name") are looked up in the spec files of a CDI directory
// (JSON or YAML), and their container edits are collected — each spec's
// top-level edits first, then the device's own, as the library applies them.
// The simulated kubelet has no container runtime, so only the environment
// takes effect; device nodes and mounts are reported for the container to
// see (pod_worker.cc). Pure apart from reading the directory; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace canhazgpu::simkubelet {

struct CdiEdits {
  std::vector<std::string> env;           // "NAME=value", in the order they apply
  std::vector<std::string> device_nodes;  // paths as the container would see them
  std::vector<std::string> mounts;        // "hostPath:containerPath"
};

// The edits of every id, in order. An id no spec names fails the whole call
// with the runtime's message ("unresolvable CDI devices ..."); a spec file
// that does not parse is skipped, as the CDI registry skips it.
absl::StatusOr<CdiEdits> ResolveCdiDevices(const std::string& cdi_dir,
                                           const std::vector<std::string>& ids);

}  // namespace canhazgpu::simkubelet
