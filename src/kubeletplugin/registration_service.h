// RegistrationService: the pluginregistration.Registration service the
// kubelet's plugin watcher calls on our registration socket. GetInfo tells
// it who we are and where the DRA socket is; NotifyRegistrationStatus tells
// us whether it accepted us, which we keep (and report to a callback) so the
// daemon can log a refusal. Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "kubelet/pluginregistration.grpc.pb.h"

namespace canhazgpu::kubeletplugin {

// What the kubelet said about our registration.
struct RegistrationStatus {
  bool registered = false;
  std::string error;  // the kubelet's reason when not registered
};

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  // `on_status` (may be empty) runs on a gRPC thread for every notification.
  RegistrationService(pluginregistration::PluginInfo info,
                      std::function<void(const RegistrationStatus&)> on_status);

  grpc::Status GetInfo(grpc::ServerContext* context, const pluginregistration::InfoRequest* request,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* response) override;

  // The latest notification; nullopt before the first.
  std::optional<RegistrationStatus> last_status() const;

 private:
  const pluginregistration::PluginInfo info_;
  const std::function<void(const RegistrationStatus&)> on_status_;
  mutable Mutex mu_;
  std::optional<RegistrationStatus> last_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace canhazgpu::kubeletplugin
