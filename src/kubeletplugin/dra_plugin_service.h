// DraPluginService<Api>: the kubelet's DRAPlugin service of one protocol
// version (DraV1 or DraV1beta1 from dra_versions.h) on top of a NodeService.
// Each handler decodes, calls claim_requests.h (which calls the driver) and
// encodes; it never fails the RPC, since the kubelet discards a whole
// response on an RPC error and per-claim errors carry the failures. The
// driver's work is bounded by the call's deadline and cancellation
// (call_bounds.h).
// Thread-safe as far as the NodeService is; it must outlive the service.
#pragma once

#include "driver/node_service.h"
#include "grpcpp/server_context.h"
#include "kubeletplugin/call_bounds.h"
#include "kubeletplugin/claim_requests.h"
#include "kubeletplugin/dra_codec.h"

namespace canhazgpu::kubeletplugin {

template <typename Api>
class DraPluginService final : public Api::DRAPlugin::Service {
 public:
  explicit DraPluginService(driver::NodeService& node) : node_(node) {}

  grpc::Status NodePrepareResources(grpc::ServerContext* context,
                                    const typename Api::PrepareRequest* request,
                                    typename Api::PrepareResponse* response) override {
    EncodePrepareResults(PrepareClaims(node_, DecodeClaims(*request), BoundsOf(*context)),
                         response);
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext* context,
                                      const typename Api::UnprepareRequest* request,
                                      typename Api::UnprepareResponse* response) override {
    EncodeUnprepareResults(UnprepareClaims(node_, DecodeClaims(*request), BoundsOf(*context)),
                           response);
    return grpc::Status::OK;
  }

 private:
  driver::NodeService& node_;
};

}  // namespace canhazgpu::kubeletplugin
