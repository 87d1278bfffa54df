// PluginServer: the node driver's face to the kubelet, two gRPC servers on
// unix sockets (reference/dra.md section 1):
//   <registrar_dir>/<driver>-reg.sock  pluginregistration.Registration
//   <plugin_dir>/dra.sock              DRAPlugin v1 and v1beta1,
//                                      DRAResourceHealth v1 and v1alpha1
//                                      (with a HealthSource)
// and the standard grpc.health.v1 service on both, for liveness probes.
// The kubelet finds the registration socket, asks GetInfo for the DRA
// socket and the versions, and calls the DRA services there. Both sockets
// are mode 0600 whatever the umask, and a connection from anyone but root
// (or the daemon's own user) is closed unserved (PeerCheckedListener).
//
// Ownership: the NodeService and HealthSource belong to the caller and must
// outlive the server. Threading: calls arrive on gRPC's thread pool; the
// public methods are thread-safe. Shutdown removes both sockets, which
// deregisters the plugin.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/log.h"
#include "driver/health_source.h"
#include "driver/node_service.h"
#include "grpcpp/server.h"
#include "kubeletplugin/calls_in_flight.h"
#include "kubeletplugin/peer_checked_listener.h"
#include "kubeletplugin/registration_service.h"

namespace canhazgpu::kubeletplugin {

inline constexpr char kDriverName[] = "gpu.canhazgpu.dev";

struct PluginServerOptions {
  std::string driver_name = kDriverName;
  // Watched by the kubelet; the same path inside and outside the container.
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";
  // Ours alone: holds dra.sock.
  std::string plugin_dir = std::string("/var/lib/kubelet/plugins/") + kDriverName;
  // The versions advertised in GetInfo, newest first (the kubelet takes the
  // first it supports). Empty: all we serve. Tests set others to play an
  // older or broken plugin.
  std::vector<std::string> supported_versions;
  // Called with each NotifyRegistrationStatus, on a gRPC thread.
  std::function<void(const RegistrationStatus&)> on_registration_status;
  // One warning per connection refused (a peer other than root), on the
  // listener's thread.
  Log log;
};

class PluginServer {
 public:
  // Listens on both sockets (DRA first, so that the kubelet never finds a
  // registration pointing nowhere). `health` may be null: then no health
  // service is served or advertised.
  static absl::StatusOr<std::unique_ptr<PluginServer>> Start(PluginServerOptions options,
                                                             driver::NodeService& node,
                                                             driver::HealthSource* health);

  // Shuts down if still running.
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Removes the registration socket (the kubelet deregisters us), ends the
  // health streams, waits for calls in flight (cancelling them after a
  // grace period) and removes the DRA socket. Idempotent.
  void Shutdown();

  const std::string& registration_socket() const { return registration_socket_; }
  const std::string& dra_socket() const { return dra_socket_; }
  const std::vector<std::string>& supported_versions() const { return supported_versions_; }

  // What the kubelet last said about our registration; nullopt before it
  // said anything.
  std::optional<RegistrationStatus> registration_status() const;

 private:
  // A gRPC server and the listener that admits its connections.
  struct Endpoint {
    std::unique_ptr<grpc::Server> server;
    std::unique_ptr<PeerCheckedListener> listener;  // stopped before the server ends
  };

  PluginServer() = default;
  // Serves `services` on `socket`.
  static absl::StatusOr<Endpoint> Listen(const std::string& socket,
                                         const std::vector<grpc::Service*>& services,
                                         const Log& log);
  absl::Status StartDraServer(driver::NodeService& node, driver::HealthSource* health);
  absl::Status StartRegistrationServer(const PluginServerOptions& options);
  // Takes ownership of `service` for the server's lifetime.
  grpc::Service* Keep(std::unique_ptr<grpc::Service> service);

  std::string registration_socket_;
  std::string dra_socket_;
  std::vector<std::string> supported_versions_;
  Log log_;
  std::atomic<bool> stopping_{false};
  // The prepares, unprepares and health streams running, which Shutdown
  // waits for.
  CallsInFlight calls_;
  class CountedNodeService;
  std::unique_ptr<CountedNodeService> counted_node_;
  // The services must outlive the servers that call them.
  std::vector<std::unique_ptr<grpc::Service>> services_;
  RegistrationService* registration_service_ = nullptr;  // owned by services_
  Endpoint dra_;
  Endpoint registration_;
};

}  // namespace canhazgpu::kubeletplugin
