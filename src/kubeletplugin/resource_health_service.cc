#include "kubeletplugin/resource_health_service.h"

#include <chrono>

namespace canhazgpu::kubeletplugin {
namespace {

// How long one wait on the source lasts before the loop looks at the
// cancellation flags again: the delay a stopping server or a departed
// kubelet sees at most.
constexpr std::chrono::milliseconds kPollInterval{100};

}  // namespace

grpc::Status StreamHealth(driver::HealthSource& source, const std::atomic<bool>& stopping,
                          grpc::ServerContext& context,
                          const std::function<bool(const driver::HealthSnapshot&)>& send) {
  driver::HealthSnapshot snapshot = source.Current();
  if (!send(snapshot)) {
    return grpc::Status::OK;  // the kubelet went away; nobody reads a status
  }
  while (!stopping.load() && !context.IsCancelled()) {
    driver::HealthSnapshot next = source.WaitForChange(snapshot.version, kPollInterval);
    if (next.version == snapshot.version) {
      continue;
    }
    snapshot = std::move(next);
    if (!send(snapshot)) {
      break;
    }
  }
  return grpc::Status::OK;
}

}  // namespace canhazgpu::kubeletplugin
