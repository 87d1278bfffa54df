#include "kubeletplugin/plugin_server.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <utility>

#include "core/status_macros.h"
#include "core/strings.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_builder.h"
#include "kubeletplugin/dra_plugin_service.h"
#include "kubeletplugin/dra_versions.h"
#include "kubeletplugin/grpc_deadline.h"
#include "kubeletplugin/peer_checked_listener.h"
#include "kubeletplugin/resource_health_service.h"
#include "kubeletplugin/unix_socket.h"

namespace canhazgpu::kubeletplugin {
namespace {

// How long Shutdown lets calls in flight finish before cancelling them. The
// kubelet retries a cancelled prepare, so this only needs to cover the
// common case of a call about to end.
constexpr std::chrono::seconds kShutdownGrace{5};
// For what is left once our handlers have returned (WaitForNone): gRPC
// sending their final statuses. Shutdown returns as soon as that is done, so
// this bound only matters on a loaded machine, where 300 ms was sometimes too
// short and a health stream that had ended cleanly reached the kubelet as
// UNAVAILABLE ("Broken pipe").
constexpr std::chrono::seconds kHealthStreamsEnd{2};

std::vector<std::string> DefaultVersions(bool with_health) {
  std::vector<std::string> versions = {std::string(DraV1::kService),
                                       std::string(DraV1beta1::kService)};
  if (with_health) {
    versions.emplace_back(HealthV1::kService);
    versions.emplace_back(HealthV1alpha1::kService);
  }
  return versions;
}

// The sockets are the kubelet's alone (it runs as root): whatever the umask,
// nobody else may connect, and PeerCheckedListener refuses anyone else who
// gets a descriptor to one all the same.
constexpr mode_t kSocketMode = 0600;

}  // namespace

// The node's calls, each counted while it runs.
class PluginServer::CountedNodeService : public driver::NodeService {
 public:
  CountedNodeService(driver::NodeService& node, CallsInFlight& calls)
      : node_(node), calls_(calls) {}

  std::map<std::string, driver::PrepareResult> PrepareClaims(
      const std::vector<driver::ClaimRef>& claims, const driver::CallBounds& bounds) override {
    CallsInFlight::Scope counted(calls_);
    return node_.PrepareClaims(claims, bounds);
  }
  std::map<std::string, std::string> UnprepareClaims(const std::vector<driver::ClaimRef>& claims,
                                                     const driver::CallBounds& bounds) override {
    CallsInFlight::Scope counted(calls_);
    return node_.UnprepareClaims(claims, bounds);
  }

 private:
  driver::NodeService& node_;
  CallsInFlight& calls_;
};

absl::StatusOr<std::unique_ptr<PluginServer>> PluginServer::Start(PluginServerOptions options,
                                                                  driver::NodeService& node,
                                                                  driver::HealthSource* health) {
  std::unique_ptr<PluginServer> server(new PluginServer());
  server->registration_socket_ =
      (std::filesystem::path(options.registrar_dir) / (options.driver_name + "-reg.sock")).string();
  // The kubelet dials GetInfo's endpoint from its own working directory.
  server->dra_socket_ =
      std::filesystem::absolute(std::filesystem::path(options.plugin_dir) / "dra.sock").string();
  server->log_ = options.log;
  server->supported_versions_ = options.supported_versions.empty()
                                    ? DefaultVersions(health != nullptr)
                                    : options.supported_versions;
  // Both paths are checked before either socket appears.
  RETURN_IF_ERROR(CheckSocketPath(server->dra_socket_));
  RETURN_IF_ERROR(CheckSocketPath(server->registration_socket_));
  // Read by every ServerBuilder made afterwards; it serves grpc.health.v1,
  // reporting SERVING until Shutdown.
  grpc::EnableDefaultHealthCheckService(true);
  RETURN_IF_ERROR(server->StartDraServer(node, health));
  RETURN_IF_ERROR(server->StartRegistrationServer(options));
  return server;
}

absl::Status PluginServer::StartDraServer(driver::NodeService& node, driver::HealthSource* health) {
  counted_node_ = std::make_unique<CountedNodeService>(node, calls_);
  std::vector<grpc::Service*> services = {
      Keep(std::make_unique<DraPluginService<DraV1>>(*counted_node_)),
      Keep(std::make_unique<DraPluginService<DraV1beta1>>(*counted_node_))};
  if (health != nullptr) {
    services.push_back(
        Keep(std::make_unique<ResourceHealthService<HealthV1>>(*health, stopping_, calls_)));
    services.push_back(
        Keep(std::make_unique<ResourceHealthService<HealthV1alpha1>>(*health, stopping_, calls_)));
  }
  ASSIGN_OR_RETURN(dra_, Listen(dra_socket_, services, log_));
  return absl::OkStatus();
}

absl::Status PluginServer::StartRegistrationServer(const PluginServerOptions& options) {
  pluginregistration::PluginInfo info;
  info.set_type(std::string(kPluginType));
  info.set_name(options.driver_name);
  info.set_endpoint(dra_socket_);
  for (const std::string& version : supported_versions_) {
    info.add_supported_versions(version);
  }
  auto registration =
      std::make_unique<RegistrationService>(std::move(info), options.on_registration_status);
  registration_service_ = registration.get();
  Keep(std::move(registration));
  ASSIGN_OR_RETURN(registration_, Listen(registration_socket_, {registration_service_}, log_));
  return absl::OkStatus();
}

absl::StatusOr<PluginServer::Endpoint> PluginServer::Listen(
    const std::string& socket, const std::vector<grpc::Service*>& services, const Log& log) {
  RETURN_IF_ERROR(PrepareSocketPath(socket));
  // No listening port: the listener hands gRPC each connection it admits.
  grpc::ServerBuilder builder;
  for (grpc::Service* service : services) {
    builder.RegisterService(service);
  }
  Endpoint endpoint;
  endpoint.server = builder.BuildAndStart();
  if (endpoint.server == nullptr) {
    // gRPC logs the reason to stderr but returns none.
    return absl::UnavailableError(StrCat("cannot start the gRPC server for ", socket));
  }
  absl::StatusOr<std::unique_ptr<PeerCheckedListener>> listener =
      PeerCheckedListener::Start(socket, kSocketMode, *endpoint.server, log);
  if (!listener.ok()) {
    endpoint.server->Shutdown();
    return listener.status();
  }
  endpoint.listener = *std::move(listener);
  return endpoint;
}

grpc::Service* PluginServer::Keep(std::unique_ptr<grpc::Service> service) {
  services_.push_back(std::move(service));
  return services_.back().get();
}

PluginServer::~PluginServer() { Shutdown(); }

void PluginServer::Shutdown() {
  if (stopping_.exchange(true)) {
    return;
  }
  // Whatever Start got to: a failed Start leaves some members unset.
  if (registration_.server != nullptr) {
    registration_.listener->Stop();
    RemoveSocket(registration_socket_);
    registration_.server->Shutdown(DeadlineAfter(kShutdownGrace));
  }
  if (dra_.server != nullptr) {
    // The health streams see stopping_ and end within their poll interval;
    // prepares in flight get the grace. Then nothing of ours runs, and what
    // is left (the kubelet's idle connection) is cut at once. The streams
    // must end before gRPC's Shutdown begins: once it has sent GOAWAY, the
    // transport closes as its last stream ends, and a kubelet that writes
    // (a window update, a ping's ack) before it has read the stream's final
    // status gets "Broken pipe" instead of that status.
    calls_.WaitForNone(kShutdownGrace);
    dra_.listener->Stop();
    dra_.server->Shutdown(DeadlineAfter(kHealthStreamsEnd));
    RemoveSocket(dra_socket_);
  }
}

std::optional<RegistrationStatus> PluginServer::registration_status() const {
  return registration_service_ == nullptr ? std::nullopt : registration_service_->last_status();
}

}  // namespace canhazgpu::kubeletplugin
