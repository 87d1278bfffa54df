// The protocol versions the daemon speaks, each as a traits struct naming
// its generated types and the string it is advertised by in PluginInfo.
// The services and the kubelet client are templates over these structs (and
// dra_codec.h over the message types), so every version shares one
// implementation.
#pragma once

#include <string_view>

#include "kubelet/dra_health_v1.grpc.pb.h"
#include "kubelet/dra_health_v1alpha1.grpc.pb.h"
#include "kubelet/dra_v1.grpc.pb.h"
#include "kubelet/dra_v1beta1.grpc.pb.h"

namespace canhazgpu::kubeletplugin {

inline constexpr std::string_view kPluginType = "DRAPlugin";

namespace dra_v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace dra_v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// DRAPlugin: NodePrepareResources and NodeUnprepareResources.
struct DraV1 {
  static constexpr std::string_view kService = "v1.DRAPlugin";
  using DRAPlugin = dra_v1::DRAPlugin;
  using PrepareRequest = dra_v1::NodePrepareResourcesRequest;
  using PrepareResponse = dra_v1::NodePrepareResourcesResponse;
  using UnprepareRequest = dra_v1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = dra_v1::NodeUnprepareResourcesResponse;
};

struct DraV1beta1 {
  static constexpr std::string_view kService = "v1beta1.DRAPlugin";
  using DRAPlugin = dra_v1beta1::DRAPlugin;
  using PrepareRequest = dra_v1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = dra_v1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = dra_v1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = dra_v1beta1::NodeUnprepareResourcesResponse;
};

// DRAResourceHealth: the NodeWatchResources stream.
struct HealthV1 {
  static constexpr std::string_view kService = "v1.DRAResourceHealth";
  using DRAResourceHealth = ::v1::DRAResourceHealth;
  using WatchRequest = ::v1::NodeWatchResourcesRequest;
  using WatchResponse = ::v1::NodeWatchResourcesResponse;
};

struct HealthV1alpha1 {
  static constexpr std::string_view kService = "v1alpha1.DRAResourceHealth";
  using DRAResourceHealth = ::v1alpha1::DRAResourceHealth;
  using WatchRequest = ::v1alpha1::NodeWatchResourcesRequest;
  using WatchResponse = ::v1alpha1::NodeWatchResourcesResponse;
};

}  // namespace canhazgpu::kubeletplugin
