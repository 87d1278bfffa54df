// ResourceHealthService<Api>: the kubelet's DRAResourceHealth service of one
// protocol version (HealthV1 or HealthV1alpha1 from dra_versions.h) on top
// of a HealthSource. NodeWatchResources sends the complete device list at
// once and again on every change, until the kubelet cancels or the server
// stops (then the stream ends with OK and the kubelet reconnects to the
// next plugin instance). Each stream holds one server thread while open.
#pragma once

#include <atomic>
#include <functional>

#include "driver/health_source.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/sync_stream.h"
#include "kubeletplugin/calls_in_flight.h"
#include "kubeletplugin/dra_codec.h"

namespace canhazgpu::kubeletplugin {

// The version-independent loop: `send` writes one snapshot and returns false
// when the stream is broken. Returns when `context` is cancelled, `stopping`
// turns true, or a write fails.
grpc::Status StreamHealth(driver::HealthSource& source, const std::atomic<bool>& stopping,
                          grpc::ServerContext& context,
                          const std::function<bool(const driver::HealthSnapshot&)>& send);

template <typename Api>
class ResourceHealthService final : public Api::DRAResourceHealth::Service {
 public:
  // `source`, `stopping` and `calls` must outlive the service; each stream
  // is counted in `calls` while it is open.
  ResourceHealthService(driver::HealthSource& source, const std::atomic<bool>& stopping,
                        CallsInFlight& calls)
      : source_(source), stopping_(stopping), calls_(calls) {}

  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const typename Api::WatchRequest* /*request*/,
      grpc::ServerWriter<typename Api::WatchResponse>* writer) override {
    CallsInFlight::Scope counted(calls_);
    return StreamHealth(source_, stopping_, *context, [&](const driver::HealthSnapshot& snapshot) {
      typename Api::WatchResponse response;
      EncodeHealth(snapshot.devices, &response);
      return writer->Write(response);
    });
  }

 private:
  driver::HealthSource& source_;
  const std::atomic<bool>& stopping_;
  CallsInFlight& calls_;
};

}  // namespace canhazgpu::kubeletplugin
