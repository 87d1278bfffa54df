// Container Device Interface specs for prepared claims (reference/dra.md §5.3
// and §6): one transient spec per claim, kind k8s.gpu.canhazgpu.dev/claim,
// one CDI device per allocated device and one per request of the claim. The
// runtime applies the spec when the kubelet passes the ids we return from
// NodePrepareResources; the file must exist before prepare returns and stay
// until unprepare. Pure functions, except the two that touch the directory.
//
// A container sees exactly the devices of the requests it names. The
// kubelet gives a container naming request R the ids of the devices whose
// request names hold R (and one naming the whole claim every device's), and
// the runtime applies spec-wide edits to any container that gets a device of
// the spec. So nothing that depends on which devices a container has is
// spec-wide: each device carries its own device nodes, and each request a
// CDI device of its own with the environment that lists its devices, whose
// id every device of that request returns beside its own.
#pragma once

#include <cstdint>
#include <optional>
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

// A share of a GPU's memory (docs/sharing.md), as its request's containers
// are told of it.
struct CdiShare {
  uint64_t memory = 0;             // the share's bytes
  uint64_t total = 0;              // the GPU's bytes; 0 when unknown
  uint64_t shareable = 0;          // the GPU's shareable bytes (MPS's thread percentage)
  std::string isolation = "none";  // what a pod's share gets: none or mps
  std::string mps_pipe_dir;        // under MPS: the GPU's daemon; "" otherwise
};

// One allocated device of a claim, as the container gets it.
struct CdiDevice {
  std::string name;   // the ResourceSlice device name: "gpu-3", "gpu-0-mig-1g5gb-19-0"
  std::string uuid;   // GPU-…, or MIG-… for a MIG instance
  int gpu_minor = 0;  // /dev/nvidia<minor> of the GPU (the parent, for MIG)
  bool is_mig = false;
  // More device nodes this one needs (a MIG instance's capability nodes).
  std::vector<std::string> extra_device_nodes;
  // The claim's requests it serves, as allocated ("gpu", "gpu/small"); empty
  // for a device that serves the whole claim.
  std::vector<std::string> requests;
  // A share of the GPU (name is then CdiShareName's), told in its request's
  // environment; directories its containers get bound in read-write (the
  // GPU's MPS pipe directory).
  std::optional<CdiShare> share;
  std::vector<std::string> mounts;
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

// The CDI device name of a device, or of one share of it: "gpu-3", or
// "gpu-3-share-<shareID>" (a claim may hold two shares of one GPU).
std::string CdiShareName(const std::string& device, const std::string& share_id);

// The request a container's resources.claims[].request names for an
// allocated request: "gpu" for the subrequest "gpu/small" of a
// firstAvailable list. The kubelet matches containers to devices by these.
std::vector<std::string> BaseRequestNames(const std::vector<std::string>& requests);

// The ids the kubelet hands a container for one device: the device's own,
// then the environment of each request it serves (base names), or of the
// whole claim when it serves no named request.
std::vector<std::string> CdiDeviceIdsFor(const std::string& claim_uid, const std::string& device,
                                         const std::vector<std::string>& requests);

// The environment a container gets for the devices of one request (base
// name; "" for devices that serve the whole claim).
struct RequestEnvironment {
  std::string request;
  std::vector<std::string> env;  // CUDA_VISIBLE_DEVICES=..., NVIDIA_VISIBLE_DEVICES=...
};
// One per request, in the order requests are first served by `devices`.
// A request with shares also gets (docs/sharing.md): CANHAZGPU_GPU_MEM and
// CANHAZGPU_GPU_MEM_TOTAL, bytes per shared GPU in CUDA_VISIBLE_DEVICES
// order, comma-separated (one number for one share); CANHAZGPU_MEMORY_ISOLATION,
// the weakest of its shares'; under MPS CUDA_MPS_PIPE_DIRECTORY (one GPU's
// daemon: the preparer refuses a request whose MPS shares are on two GPUs),
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<uuid>=<MiB>M", comma-separated per
// GPU, shares of one GPU added) and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
std::vector<RequestEnvironment> RequestEnvironments(const std::vector<CdiDevice>& devices);
// The CDI device name holding a request's environment: "<uid>-request-gpu",
// or "<uid>-claim-env" for "" (device names are gpu-N..., never these).
std::string RequestEnvDeviceName(const std::string& claim_uid, const std::string& request);
// "k8s.gpu.canhazgpu.dev-claim_<uid>.json"
std::string CdiSpecFileName(const std::string& claim_uid);
// Whether `name` is such a file name: one of ours in a directory that other
// drivers share.
bool IsCdiSpecFileName(std::string_view name);

// The spec: per device its /dev/nvidia<minor> (and extra nodes); per
// request (base name, in the order first served) the environment of its
// devices: CUDA_VISIBLE_DEVICES (its GPUs as the container numbers them,
// 0..n-1, or MIG uuids) and NVIDIA_VISIBLE_DEVICES (uuids); for the claim the
// control nodes (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools), the
// driver files and CANHAZGPU_CLAIM (ns/name).
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
