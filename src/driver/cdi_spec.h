// Container Device Interface specs for prepared claims (reference/dra.md §5.3
// and §6): one transient spec per claim, kind k8s.gpu.canhazgpu.dev/claim,
// one CDI device per allocated device. The runtime applies the spec when the
// kubelet passes the ids we return from NodePrepareResources; the file must
// exist before prepare returns and stay until unprepare. Pure functions,
// except the two that touch the directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace canhazgpu::driver {

inline constexpr char kCdiVendor[] = "k8s.gpu.canhazgpu.dev";
inline constexpr char kCdiClass[] = "claim";
// Device names may start with a digit (claim uids do): 0.5.0 is the oldest
// version that allows it, and old enough for containerd 1.7 and CRI-O.
inline constexpr char kCdiVersion[] = "0.5.0";

// One allocated device of a claim, as the container gets it.
struct CdiDevice {
  std::string name;   // the ResourceSlice device name: "gpu-3", "gpu-0-mig-1g5gb-19-0"
  std::string uuid;   // GPU-…, or MIG-… for a MIG instance
  int gpu_minor = 0;  // /dev/nvidia<minor> of the GPU (the parent, for MIG)
  bool is_mig = false;
  // More device nodes this one needs (a MIG instance's capability nodes).
  std::vector<std::string> extra_device_nodes;
};

// The driver's user-space files a container needs when the node has no
// NVIDIA Container Toolkit spec: bind-mounted read-only at the same path.
struct DriverFiles {
  std::vector<std::string> libraries;
  std::vector<std::string> binaries;
};

struct ClaimCdiInput {
  std::string claim_uid;
  std::string claim_namespace;
  std::string claim_name;
  std::vector<CdiDevice> devices;  // in the order the container should number them
  DriverFiles driver_files;        // empty when the toolkit's spec provides them
};

// "k8s.gpu.canhazgpu.dev/claim=<uid>-gpu-3"
std::string CdiDeviceId(const std::string& claim_uid, const std::string& device);
// "k8s.gpu.canhazgpu.dev-claim_<uid>.json"
std::string CdiSpecFileName(const std::string& claim_uid);
// Whether `name` is such a file name: one of ours in a directory that other
// drivers share.
bool IsCdiSpecFileName(std::string_view name);

// The spec: per device its /dev/nvidia<minor> (and extra nodes); for the
// claim the control nodes (/dev/nvidiactl, /dev/nvidia-uvm,
// /dev/nvidia-uvm-tools), the driver files, and the environment:
// CUDA_VISIBLE_DEVICES (the claim's GPUs as the container numbers them, 0..n-1,
// or MIG uuids), NVIDIA_VISIBLE_DEVICES (uuids), CANHAZGPU_CLAIM (ns/name).
nlohmann::json ClaimCdiSpec(const ClaimCdiInput& input);

// Writes the spec into `dir` atomically (temporary file, fsync, rename),
// creating `dir` if needed. Idempotent.
absl::Status WriteCdiSpec(const std::string& dir, const std::string& claim_uid,
                          const nlohmann::json& spec);
// Removes the claim's spec; OK when there is none.
absl::Status RemoveCdiSpec(const std::string& dir, const std::string& claim_uid);

// The user-space files of the NVIDIA driver under `root` ("/" on a node, a
// fake tree in tests): libraries from the usual library directories
// (libnvidia-*.so.*, libcuda.so.*, libnvcuvid.so.*...) and binaries
// (nvidia-smi, nvidia-debugdump, nvidia-persistenced) from the bin
// directories. Paths are as the container sees them (without `root`).
DriverFiles FindDriverFiles(const std::string& root);

// The NVIDIA Container Toolkit's CDI device ids for these GPU uuids, when a
// spec of kind nvidia.com/gpu in `spec_dirs` names each of them (by uuid);
// empty when any is missing (then we mount the driver ourselves).
std::vector<std::string> ToolkitDeviceIds(const std::vector<std::string>& spec_dirs,
                                          const std::vector<std::string>& uuids);

}  // namespace canhazgpu::driver
