// Conversions between the kubelet protocol messages and the driver's
// structs (driver/node_service.h, driver/health_source.h). Templates,
// because every protocol version has its own generated types with the same
// accessors; the only difference, Device.share_id (v1 only), is resolved at
// compile time. Used by the plugin's services and by the kubelet client.
#pragma once

#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "driver/health_source.h"
#include "driver/node_service.h"

namespace canhazgpu::kubeletplugin {

// Request.claims <-> ClaimRef.
template <typename Request>
std::vector<driver::ClaimRef> DecodeClaims(const Request& request) {
  std::vector<driver::ClaimRef> claims;
  claims.reserve(request.claims_size());
  for (const auto& claim : request.claims()) {
    claims.push_back(
        {.namespace_name = claim.namespace_(), .uid = claim.uid(), .name = claim.name()});
  }
  return claims;
}

template <typename Request>
void EncodeClaims(const std::vector<driver::ClaimRef>& claims, Request* request) {
  for (const driver::ClaimRef& ref : claims) {
    auto* claim = request->add_claims();
    claim->set_namespace_(ref.namespace_name);
    claim->set_uid(ref.uid);
    claim->set_name(ref.name);
  }
}

// Device <-> PreparedDevice. A version without share_id drops it.
template <typename Device>
void EncodeDevice(const driver::PreparedDevice& in, Device* out) {
  out->mutable_request_names()->Add(in.request_names.begin(), in.request_names.end());
  out->set_pool_name(in.pool);
  out->set_device_name(in.device);
  out->mutable_cdi_device_ids()->Add(in.cdi_device_ids.begin(), in.cdi_device_ids.end());
  if constexpr (requires(Device & d) { d.set_share_id(std::string()); }) {
    if (in.share_id.has_value()) {
      out->set_share_id(*in.share_id);
    }
  }
}

template <typename Device>
driver::PreparedDevice DecodeDevice(const Device& in) {
  driver::PreparedDevice out{
      .request_names = {in.request_names().begin(), in.request_names().end()},
      .pool = in.pool_name(),
      .device = in.device_name(),
      .cdi_device_ids = {in.cdi_device_ids().begin(), in.cdi_device_ids().end()},
  };
  if constexpr (requires(const Device& d) { d.has_share_id(); }) {
    if (in.has_share_id()) {
      out.share_id = in.share_id();
    }
  }
  return out;
}

// NodePrepareResourcesResponse <-> uid -> PrepareResult.
template <typename Response>
void EncodePrepareResults(const std::map<std::string, driver::PrepareResult>& results,
                          Response* response) {
  auto& claims = *response->mutable_claims();
  for (const auto& [uid, result] : results) {
    auto& claim = claims[uid];
    for (const driver::PreparedDevice& device : result.devices) {
      EncodeDevice(device, claim.add_devices());
    }
    claim.set_error(result.error);
  }
}

template <typename Response>
std::map<std::string, driver::PrepareResult> DecodePrepareResults(const Response& response) {
  std::map<std::string, driver::PrepareResult> results;
  for (const auto& [uid, claim] : response.claims()) {
    driver::PrepareResult& result = results[uid];
    for (const auto& device : claim.devices()) {
      result.devices.push_back(DecodeDevice(device));
    }
    result.error = claim.error();
  }
  return results;
}

// NodeUnprepareResourcesResponse <-> uid -> error.
template <typename Response>
void EncodeUnprepareResults(const std::map<std::string, std::string>& errors, Response* response) {
  auto& claims = *response->mutable_claims();
  for (const auto& [uid, error] : errors) {
    claims[uid].set_error(error);
  }
}

template <typename Response>
std::map<std::string, std::string> DecodeUnprepareResults(const Response& response) {
  std::map<std::string, std::string> errors;
  for (const auto& [uid, claim] : response.claims()) {
    errors[uid] = claim.error();
  }
  return errors;
}

// NodeWatchResourcesResponse <-> the device list. The enum numbers are the
// protocol's: UNKNOWN 0, HEALTHY 1, UNHEALTHY 2; a number we do not know
// (a newer kubelet's) reads as unknown.
template <typename Response>
void EncodeHealth(const std::vector<driver::DeviceHealth>& devices, Response* response) {
  using HealthStatus = std::decay_t<decltype(response->devices(0).health())>;
  for (const driver::DeviceHealth& in : devices) {
    auto* out = response->add_devices();
    out->mutable_device()->set_pool_name(in.pool);
    out->mutable_device()->set_device_name(in.device);
    int number = in.state == driver::DeviceHealth::State::kHealthy     ? 1
                 : in.state == driver::DeviceHealth::State::kUnhealthy ? 2
                                                                       : 0;
    out->set_health(static_cast<HealthStatus>(number));
    out->set_last_updated_time(in.last_updated_unix);
    out->set_health_check_timeout_seconds(in.timeout_seconds);
    out->set_message(in.message);
  }
}

template <typename Response>
std::vector<driver::DeviceHealth> DecodeHealth(const Response& response) {
  std::vector<driver::DeviceHealth> devices;
  for (const auto& in : response.devices()) {
    int number = static_cast<int>(in.health());
    devices.push_back({
        .pool = in.device().pool_name(),
        .device = in.device().device_name(),
        .state = number == 1   ? driver::DeviceHealth::State::kHealthy
                 : number == 2 ? driver::DeviceHealth::State::kUnhealthy
                               : driver::DeviceHealth::State::kUnknown,
        .last_updated_unix = in.last_updated_time(),
        .timeout_seconds = in.health_check_timeout_seconds(),
        .message = in.message(),
    });
  }
  return devices;
}

}  // namespace canhazgpu::kubeletplugin
