// KubeletClient: the kubelet's side of the plugin protocols, for our kubelet
// emulator and for tests. Register() does what the kubelet's plugin watcher
// does with a new registration socket (reference/dra.md section 1a): dial it
// (10 s), GetInfo (1 s), check the answer and pick the first version in the
// plugin's list that this kubelet speaks, NotifyRegistrationStatus (5 s);
// then it talks to the plugin's DRA socket in that version, with the
// kubelet's 45 s deadline per call.
//
// Errors are absl::Status with one-line messages naming the socket and the
// call. Threading: all methods may be called from several threads at once.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "driver/health_source.h"
#include "driver/node_service.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace canhazgpu::kubeletplugin {

struct PluginInfo {
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

struct KubeletClientOptions {
  std::chrono::milliseconds dial_timeout{10'000};
  std::chrono::milliseconds get_info_timeout{1'000};
  std::chrono::milliseconds notify_timeout{5'000};
  // Per NodePrepareResources / NodeUnprepareResources call.
  std::chrono::milliseconds call_timeout{45'000};
  // The DRAPlugin versions this kubelet speaks; 1.34 and newer speak both,
  // 1.33 only v1beta1.
  std::vector<std::string> dra_services = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  // The DRAResourceHealth versions, used when the plugin advertises one.
  std::vector<std::string> health_services = {"v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"};
};

class KubeletClient {
 public:
  using HealthUpdate = std::function<bool(const std::vector<driver::DeviceHealth>&)>;

  // Registers the plugin serving `registration_socket`. A plugin whose
  // answer this kubelet refuses (not a DRAPlugin, no name, no version in
  // common) is told so through NotifyRegistrationStatus, and the result is
  // FailedPrecondition with the same message.
  static absl::StatusOr<std::unique_ptr<KubeletClient>> Register(
      const std::string& registration_socket, KubeletClientOptions options = {});

  ~KubeletClient();

  const PluginInfo& plugin() const { return plugin_; }
  // The DRAPlugin version in use, e.g. "v1.DRAPlugin".
  const std::string& service() const { return service_; }
  // The DRAResourceHealth version in use; "" when there is none in common.
  const std::string& health_service() const { return health_service_; }

  // uid -> result, as the plugin answered (per-claim errors inside).
  absl::StatusOr<std::map<std::string, driver::PrepareResult>> NodePrepareResources(
      const std::vector<driver::ClaimRef>& claims);
  // uid -> error, "" for success.
  absl::StatusOr<std::map<std::string, std::string>> NodeUnprepareResources(
      const std::vector<driver::ClaimRef>& claims);

  // Runs one NodeWatchResources stream, handing each complete device list
  // to `on_update`, until the plugin ends the stream (OK), `on_update`
  // returns false or CancelWatches() is called (OK), or the stream fails.
  // FailedPrecondition when there is no health version in common.
  absl::Status WatchResources(const HealthUpdate& on_update);

  // Ends every WatchResources running now.
  void CancelWatches();

  class DraCaller;  // one per protocol version, in the .cc

 private:
  KubeletClient() = default;

  PluginInfo plugin_;
  std::string service_;
  std::string health_service_;
  KubeletClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;  // to the plugin's DRA socket
  std::unique_ptr<DraCaller> dra_;
  Mutex mu_;
  std::set<grpc::ClientContext*> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::kubeletplugin
