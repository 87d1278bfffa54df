#include "kubeletplugin/registration_service.h"

#include <utility>

namespace canhazgpu::kubeletplugin {

RegistrationService::RegistrationService(pluginregistration::PluginInfo info,
                                         std::function<void(const RegistrationStatus&)> on_status)
    : info_(std::move(info)), on_status_(std::move(on_status)) {}

grpc::Status RegistrationService::GetInfo(grpc::ServerContext* /*context*/,
                                          const pluginregistration::InfoRequest* /*request*/,
                                          pluginregistration::PluginInfo* response) {
  *response = info_;
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext* /*context*/, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse* /*response*/) {
  RegistrationStatus status{.registered = request->plugin_registered(), .error = request->error()};
  {
    MutexLock lock(mu_);
    last_status_ = status;
  }
  // Outside the lock: the callback may log, or ask last_status().
  if (on_status_) {
    on_status_(status);
  }
  return grpc::Status::OK;
}

std::optional<RegistrationStatus> RegistrationService::last_status() const {
  MutexLock lock(mu_);
  return last_status_;
}

}  // namespace canhazgpu::kubeletplugin
