// Tests' and benchmarks' ResourceClaims as the scheduler leaves them: one
// request "gpu" of class gpu.canhazgpu.dev, allocated devices of a pool of
// our driver, reserved for a pod — created through the client (the spec,
// then the status, as the real flow writes them).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "driver/node_service.h"
#include "kube/client.h"

namespace canhazgpu::driver::testing {

// Creates claim `name` in `ns` allocated `devices` of `pool`, reserved for
// `pod` when not empty; returns what the kubelet would send for it.
inline absl::StatusOr<ClaimRef> CreateAllocatedClaim(kube::Client& client, const std::string& ns,
                                                     const std::string& name,
                                                     const std::vector<std::string>& devices,
                                                     const std::string& pool = "node-a",
                                                     const std::string& pod = "") {
  nlohmann::json claim = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"devices",
         {{"requests",
           {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.canhazgpu.dev"}}}}}}}}}}};
  ASSIGN_OR_RETURN(nlohmann::json created, client.CreateObject(kube::kResourceClaims, ns, claim));
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& d : devices) {
    results.push_back(
        {{"request", "gpu"}, {"driver", "gpu.canhazgpu.dev"}, {"pool", pool}, {"device", d}});
  }
  created["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  if (!pod.empty()) {
    created["status"]["reservedFor"] = {
        {{"resource", "pods"}, {"name", pod}, {"uid", "uid-" + pod}}};
  }
  ASSIGN_OR_RETURN(created, client.UpdateStatus(kube::kResourceClaims, ns, created));
  return ClaimRef{.namespace_name = ns, .uid = created["metadata"]["uid"], .name = name};
}

// One share of a device in an allocation (consumable capacity).
struct AllocatedShare {
  std::string device;
  std::string share_id;  // a lowercase UUID, as the API server requires
  std::string memory;    // its consumedCapacity memory: "10Gi"
  std::string request = "gpu";
};

// Creates claim `name` in `ns` with one request per request the shares
// name, each asking for its first share's memory of a GPU, allocated
// `shares` of `pool`, reserved for `pod` when not empty.
inline absl::StatusOr<ClaimRef> CreateAllocatedShareClaim(kube::Client& client,
                                                          const std::string& ns,
                                                          const std::string& name,
                                                          const std::vector<AllocatedShare>& shares,
                                                          const std::string& pool = "node-a",
                                                          const std::string& pod = "") {
  nlohmann::json requests = nlohmann::json::array();
  std::vector<std::string> named;
  for (const AllocatedShare& s : shares) {
    if (std::find(named.begin(), named.end(), s.request) != named.end()) continue;
    named.push_back(s.request);
    requests.push_back({{"name", s.request},
                        {"exactly",
                         {{"deviceClassName", "gpu.canhazgpu.dev"},
                          {"capacity", {{"requests", {{"memory", s.memory}}}}}}}});
  }
  nlohmann::json claim = {{"apiVersion", "resource.k8s.io/v1"},
                          {"kind", "ResourceClaim"},
                          {"metadata", {{"name", name}}},
                          {"spec", {{"devices", {{"requests", requests}}}}}};
  ASSIGN_OR_RETURN(nlohmann::json created, client.CreateObject(kube::kResourceClaims, ns, claim));
  nlohmann::json results = nlohmann::json::array();
  for (const AllocatedShare& s : shares) {
    results.push_back({{"request", s.request},
                       {"driver", "gpu.canhazgpu.dev"},
                       {"pool", pool},
                       {"device", s.device},
                       {"shareID", s.share_id},
                       {"consumedCapacity", {{"memory", s.memory}}}});
  }
  created["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
  if (!pod.empty()) {
    created["status"]["reservedFor"] = {
        {{"resource", "pods"}, {"name", pod}, {"uid", "uid-" + pod}}};
  }
  ASSIGN_OR_RETURN(created, client.UpdateStatus(kube::kResourceClaims, ns, created));
  return ClaimRef{.namespace_name = ns, .uid = created["metadata"]["uid"], .name = name};
}

}  // namespace canhazgpu::driver::testing
