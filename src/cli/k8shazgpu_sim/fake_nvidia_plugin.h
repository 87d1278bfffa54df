// A test double of NVIDIA's DRA kubelet plugin (gpu.nvidia.com), for
// `k8shazgpu-sim cluster --driver nvidia`: a cluster that looks like one
// running NVIDIA's driver instead of ours, so that what works with any GPU
// DRA driver (k8shazgpu run --class gpu.nvidia.com) can be tried and
// tested. It speaks the real protocol — the kubelet's plugin registration
// and DRAPlugin gRPC services on unix sockets (kubeletplugin::PluginServer, under
// the driver name gpu.nvidia.com) — and publishes the node's GPUs as
// ResourceSlices of driver gpu.nvidia.com (pool = node, devices gpu-0…,
// MIG instances as our model names them, attributes in the gpu.nvidia.com
// domain: dra::BuildDevicePool's, which follow NVIDIA's names). Prepare
// reads each claim's allocation from the API and writes a CDI spec (kind
// k8s.gpu.nvidia.com/device) whose environment, per request of the claim, is
// NVIDIA_VISIBLE_DEVICES (the uuids) and CUDA_VISIBLE_DEVICES (0..n-1, or
// MIG uuids) of that request's devices (driver/cdi_spec.h); unprepare
// removes it. With consumable shares (its --consumable-shares=memory) full
// GPUs are published for sharing by memory, and booked, not limited, as
// NVIDIA's are. Nothing else of NVIDIA's driver is imitated: no checkpoint,
// no health, no sharing strategies, no ComputeDomains, no node-local view
// of who holds a GPU.
//
// Threading: Start and Stop from one thread; the kubelet's calls arrive on
// gRPC threads and are thread-safe (each claim has its own spec file).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/devices.h"
#include "driver/cdi_spec.h"
#include "driver/node_service.h"
#include "kube/client.h"
#include "kubeletplugin/plugin_server.h"

namespace canhazgpu::sim {

inline constexpr char kNvidiaDriverName[] = "gpu.nvidia.com";
inline constexpr char kNvidiaCdiKind[] = "k8s.gpu.nvidia.com/device";

struct FakeNvidiaPluginOptions {
  std::string node_name;
  std::string host_file;      // the node's fake-host JSON: its GPUs
  std::string plugin_dir;     // holds dra.sock
  std::string registrar_dir;  // the kubelet's plugins_registry
  std::string cdi_dir;
  // NVIDIA's --consumable-shares=memory (merged 2026-07, PR #1257): full
  // GPUs are published with allowMultipleAllocations and a memory request
  // policy, so the scheduler books shares. As in NVIDIA's driver, nothing
  // limits a share: prepare never reads consumedCapacity, and no isolation
  // attribute is published (reference sharing-and-multinode.md §1.2).
  bool consumable_shares = false;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class FakeNvidiaPlugin final : public driver::NodeService {
 public:
  // Reads the node's GPUs, publishes its slices (owned by the Node when it
  // is registered already) and serves the plugin sockets.
  static absl::StatusOr<std::unique_ptr<FakeNvidiaPlugin>> Start(const kube::RestConfig& config,
                                                                 FakeNvidiaPluginOptions options);
  ~FakeNvidiaPlugin() override;
  // Removes the sockets (the kubelet deregisters the plugin). Idempotent.
  void Stop();

  // Each claim is quick (one GET, one file): `bounds` are not checked.
  std::map<std::string, driver::PrepareResult> PrepareClaims(
      const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& bounds) override;
  std::map<std::string, std::string> UnprepareClaims(const std::vector<driver::ClaimRef>& claims,
                                                     const driver::CallBounds& bounds) override;

  // The CDI spec of a prepared claim, and its file name in the CDI
  // directory. Pure.
  static nlohmann::json CdiSpec(const std::string& claim_uid,
                                const std::vector<driver::CdiDevice>& devices);
  static std::string CdiSpecFileName(const std::string& claim_uid);

 private:
  explicit FakeNvidiaPlugin(FakeNvidiaPluginOptions options) : options_(std::move(options)) {}
  absl::Status PublishSlices();
  driver::PrepareResult Prepare(const driver::ClaimRef& ref);

  FakeNvidiaPluginOptions options_;
  std::unique_ptr<kube::Client> client_;
  dra::DevicePool pool_;  // fixed after Start
  std::unique_ptr<kubeletplugin::PluginServer> server_;
};

}  // namespace canhazgpu::sim
