// A pod's volumes on the simulated node, made before its first container
// starts, each under the pod's directory as
// <pods_dir>/<ns>_<pod>_<uid>/volumes/<name>:
//   - emptyDir (any medium): a directory all the pod's containers share,
//     kept across container restarts and kubelet restarts, removed with the
//     pod (RemoveVolumes);
//   - hostPath: no copy — the path under the node's root filesystem
//     stand-in (`root_dir`; "" is the real /), with the kubelet's type
//     check ("", Directory, DirectoryOrCreate, File, FileOrCreate, Socket,
//     CharDevice, BlockDevice);
//   - configMap, and projected with configMap sources: the ConfigMaps'
//     keys as files (data and base64 binaryData, byte-exact), `items`
//     choosing keys and paths, `optional`, and defaultMode / item mode
//     (0644 when unset).
// Other volume types, and projected sources other than configMap, are
// refused. Containers reach the volumes through the rewriting in
// mount_paths.h, the simulator's stand-in for mount namespaces; so that
// binaries shipped in our image run, an absolute argv[0] that exists under
// the node root is taken from there (ResolveFromNodeRoot).
//
// Thread-safe: no shared state; the client must be.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"
#include "simkubelet/mount_paths.h"

namespace canhazgpu::simkubelet {

// A file a configMap or projected volume holds.
struct VolumeFile {
  std::string path;   // relative to the volume: an item's path, or the key
  std::string bytes;  // decoded
  mode_t mode = 0644;
};

// The files one ConfigMap contributes to a volume: `source` is a configMap
// volume source or a projected volume's configMap projection (name, items,
// optional); `config_map` the object read from the API, or null when it
// does not exist. Errors as the kubelet words them, e.g. `configmap "x" not
// found` or `configmap references non-existent config key: k`.
absl::StatusOr<std::vector<VolumeFile>> ConfigMapFiles(const nlohmann::json& source,
                                                       const nlohmann::json& config_map,
                                                       mode_t default_mode);

struct VolumeContext {
  kube::Client& client;
  std::string ns;           // the pod's: where its ConfigMaps are
  std::string root_dir;     // the node's root filesystem stand-in; "" = /
  std::string volumes_dir;  // <pod dir>/volumes
};

// Volume name -> the node path that stands in for it.
using VolumePaths = std::map<std::string, std::string>;

// Makes every volume of `pod` (again, on a retry: configMap contents are
// rewritten, emptyDirs kept). The error's message is the kubelet's event
// message, `MountVolume.SetUp failed for volume "NAME" : ...`; the code is
// Unimplemented for what the simulated kubelet can never mount (no retry
// helps) and NotFound / Unavailable / FailedPrecondition otherwise.
absl::StatusOr<VolumePaths> MaterializeVolumes(const nlohmann::json& pod,
                                               const VolumeContext& context);

// Removes what MaterializeVolumes made (never what a hostPath names).
void RemoveVolumes(const std::string& volumes_dir);

// The container's volumeMounts against the pod's volumes; a subPath is
// created inside a directory volume when missing, as the kubelet does.
absl::StatusOr<std::vector<MountPoint>> ContainerMounts(const nlohmann::json& container,
                                                        const VolumePaths& volumes);

// `root_dir + argv0` when argv0 is absolute and that exists, else argv0.
std::string ResolveFromNodeRoot(const std::string& root_dir, const std::string& argv0);

}  // namespace canhazgpu::simkubelet
